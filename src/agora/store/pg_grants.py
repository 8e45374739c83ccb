"""What a start refused for a privilege on PostgreSQL tells the operator to grant.

Each names the role and database in use and points to docs/scale-out.md's paragraph "The role
and the database", which lists the privileges a role that does not own the database needs.
"""

from __future__ import annotations

import re

#: SQLSTATE of a statement the role may not run.
INSUFFICIENT_PRIVILEGE = "42501"


def privileges(user: str, dbname: str, schema: str = "public") -> str:
    """What a start refused for a privilege tells the operator to grant, naming the role and
    database in use (an operator's finding: role ``app`` on database ``appdb`` was told
    ``CREATE DATABASE agora OWNER agora``, in the fourth line of the refusal). Owning the
    database gives CREATE on ``public`` only (PostgreSQL 15+), not on a namespace's schema
    another role owns: there, the schema's owner (a tester's finding)."""
    role, db, space = _ident(user), _ident(dbname), _ident(schema)
    grant = f"GRANT CONNECT, CREATE ON DATABASE {db} TO {role} (CREATE: for pg_trgm) and "
    where = f"database {db}"
    if schema == "public":
        fix = (
            f"make it the owner (ALTER DATABASE {db} OWNER TO {role}), or {grant}GRANT USAGE,"
            f" CREATE ON SCHEMA public TO {role}"
        )
    else:
        where += f" or its schema {space}"
        fix = (
            f"{grant}GRANT USAGE, CREATE ON SCHEMA {space} TO {role}, or make it the owner of"
            f" schema {space} (ALTER SCHEMA {space} OWNER TO {role})"
        )
    return f"role {role} lacks a privilege on {where}: {fix}; see {_DOCS}"


def connect_privilege(user: str, dbname: str) -> str:
    """What a log-in refused for want of CONNECT on the database tells the operator (a
    tester's finding: PostgreSQL's words alone, no grant and no pointer to the docs)."""
    role, db = _ident(user), _ident(dbname)
    return (
        f"role {role} lacks CONNECT on database {db}: GRANT CONNECT ON DATABASE {db} TO"
        f" {role}; see {_DOCS}"
    )


#: Where a refusal for a privilege points.
_DOCS = 'docs/scale-out.md, "The role and the database"'


def _ident(name: str) -> str:
    """``name`` as SQL writes an identifier: bare if it may be, else double-quoted."""
    if re.fullmatch(r"[a-z_][a-z0-9_$]*", name):
        return name
    return '"' + name.replace('"', '""') + '"'
