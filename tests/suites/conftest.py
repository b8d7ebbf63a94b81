"""pytester drives the pytest plugin's own tests."""

pytest_plugins = ["pytester"]
