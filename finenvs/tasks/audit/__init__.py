"""FinAudit-v0: audit one XBRL fact of a real SEC filing (HERCULEAN's Auditing workflow)."""
