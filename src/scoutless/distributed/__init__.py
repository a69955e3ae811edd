"""Scale-out: the history build and XGBoost on Dask, the DNN on torch distributed.

Every step calls the same target, feature, bin and split code as the single-process path;
Dask only decides which rows each call sees (one partition of whole tasks at a time).
"""
