"""What ``arco serve`` prints at start-up: where it serves, and copy-paste recipes for each client."""

from __future__ import annotations

from arco.settings import ServerSettings


def startup_banner(settings: ServerSettings, generated_token: str | None, env_token_set: bool) -> str:
    base = f"http://{settings.host}:{settings.port}"
    if generated_token:
        token_line = (
            f"Admin token (shown only this once; only its hash is stored in the warehouse):\n\n    {generated_token}\n"
        )
        token = generated_token
    elif env_token_set:
        token_line = "Admin token: the value of ARCO_ADMIN_TOKEN."
        token = "$ARCO_ADMIN_TOKEN"
    else:
        token_line = (
            "Admin token: printed when this warehouse was first served. Lost it? Run "
            "`arco admin-token --rotate --warehouse ...` to make a new one, or set ARCO_ADMIN_TOKEN."
        )
        token = "<admin token>"
    return f"""
Arco is serving the warehouse {settings.warehouse_display()}
  Iceberg REST  {base}/iceberg   (warehouse = catalog name, e.g. main)
  health        {base}/health

{token_line}
PyIceberg:
    from pyiceberg.catalog.rest import RestCatalog
    catalog = RestCatalog("arco", uri="{base}/iceberg", warehouse="main", token="{token}")

Spark (jars from `arco spark-jars`):
    pyspark --jars "$(arco spark-jars)" \\
      --conf spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions \\
      --conf spark.sql.catalog.arco=org.apache.iceberg.spark.SparkCatalog \\
      --conf spark.sql.catalog.arco.type=rest \\
      --conf spark.sql.catalog.arco.uri={base}/iceberg \\
      --conf spark.sql.catalog.arco.warehouse=main \\
      --conf spark.sql.catalog.arco.token={token}

DuckDB:
    CREATE SECRET arco (TYPE iceberg, TOKEN '{token}');
    ATTACH 'main' AS arco (TYPE iceberg, SECRET arco, ENDPOINT '{base}/iceberg');

curl:
    curl -H "Authorization: Bearer {token}" {base}/iceberg/v1/config
"""
