"""The Unity Catalog API (2.0, and the 2.1 paths today's clients call) over the shared Tier 1 catalog."""
