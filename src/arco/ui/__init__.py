"""The web UI served at ``/``: server-rendered pages over the same services, and grants, as the APIs."""
