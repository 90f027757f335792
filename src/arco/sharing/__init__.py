"""The Delta Sharing protocol server: recipients read shared Delta and Iceberg tables through signed file URLs."""
