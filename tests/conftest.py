"""Fixtures every test module may request by name (pytest finds this file itself)."""

# The ``cli`` fixture lives with the other command-line helpers; registering the module as a
# plugin shares it without importing the fixture's name into each test module.
pytest_plugins = ["cli_fixtures"]
