"""service/routes layer."""
