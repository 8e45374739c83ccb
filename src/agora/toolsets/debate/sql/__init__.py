"""Every SQL statement of the debate toolset: `schema`, `writes` (what a command commits),
`reads` (committed rows) and `queue` (the cross-topic work queue); all re-exported here.

Written so a second backend can run the same statements: ``?`` placeholders, JSON stored as
TEXT and parsed in Python, fixed-width UTC TEXT timestamps, ``ON CONFLICT`` upserts, and no
SQLite-only functions in the statements. Search runs on the casefolded ``body_folded``
column: an FTS5 ``trigram`` index (kept in batches, `fts`) narrows
candidates and a literal ``LIKE ... ESCAPE`` decides, so both paths return the same rows
(PostgreSQL would put a ``pg_trgm`` index on the same column). This module builds statements
and reads rows; it never commits (the actor or the runtime does).
"""

from agora.toolsets.debate.sql.fts import backlog as backlog
from agora.toolsets.debate.sql.fts import catch_up as catch_up
from agora.toolsets.debate.sql.protocol import *  # noqa: F403
from agora.toolsets.debate.sql.queue import *  # noqa: F403
from agora.toolsets.debate.sql.reads import *  # noqa: F403
from agora.toolsets.debate.sql.schema import MIGRATIONS as MIGRATIONS
from agora.toolsets.debate.sql.workers import *  # noqa: F403
from agora.toolsets.debate.sql.writes import *  # noqa: F403
