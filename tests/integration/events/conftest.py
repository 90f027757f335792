from support.iceberg_harness import harness  # noqa: F401 - the fixture
