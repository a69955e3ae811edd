"""PanDA integration: JEDI's task-status messages in, predictions out, tasks updated.

``listener`` (scoutless side) turns a ``defined`` task into a ``scout_prediction`` message;
``jedi_plugin`` (JEDI side, run by panda-common's message-processor agent) applies it to
the task row. ``units`` and ``messages`` hold the formats and JEDI's rules both sides share.
"""
