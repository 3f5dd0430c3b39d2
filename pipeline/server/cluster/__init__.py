"""Cluster mode: many ``zkpipe serve`` workers sharing one PostgreSQL job store (docs/cluster.md).

Imported only when ``store_url`` names PostgreSQL, so the one-host default never loads asyncpg.
"""
