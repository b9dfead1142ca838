"""Team mode: who may do what on a served dashboard (roles from ``team.toml``), and the audit log."""
