"""tabula from Python: games with exact values, stored runs and models (docs/python.md).

The games keep OpenSpiel's shapes (``load_game``, ``new_initial_state``, ``legal_actions``,
``chance_outcomes``, ``apply_action``, ``returns``...); every error of the engine is a
``ValueError`` carrying the message the ``tabula`` command line prints.
"""

from ._tabula import (
    CHANCE_PLAYER_ID,
    TERMINAL_PLAYER_ID,
    Game,
    Model,
    Player,
    State,
    deserialize_state,
    load_game,
    run,
)
from ._tabula import Store as _Store

__all__ = [
    "CHANCE_PLAYER_ID",
    "TERMINAL_PLAYER_ID",
    "Game",
    "Model",
    "Player",
    "State",
    "Store",
    "deserialize_state",
    "load_game",
    "run",
]


def _table(columns, rows):
    """A pandas DataFrame when pandas is importable, else a list of dicts."""
    try:
        import pandas
    except ImportError:
        return [dict(zip(columns, row)) for row in rows]
    return pandas.DataFrame(rows, columns=columns)


class Store(_Store):
    """A tabula store opened read-only: ``tabula.Store("tabula.db")``.

    Queries return pandas DataFrames when pandas is installed, lists of dicts otherwise.
    """

    def sql(self, query):
        """Rows of one read-only SQL statement (``tabula sql``'s guards)."""
        return _table(*self._query(query))

    def runs(self):
        """Every run, oldest first (the view ``runs_hex``)."""
        return self.sql("SELECT * FROM runs_hex ORDER BY id")

    def metrics(self, run, inherited=False):
        """A run's iterations in ``metrics_wide``: one row per iteration, a column per
        metric. ``run`` is an id, a name or a hash prefix, as ``tabula show`` takes. A
        branch's own iterations only, unless ``inherited``: then also the iterations it shares
        with its ancestors (up to where it branched), each from the ancestor whose row it is
        (its ``run_id``), as ``tabula show`` prints a branch's curve."""
        run_id = self._run_id(str(run))
        own = f"SELECT * FROM metrics_wide WHERE run_id = {run_id} ORDER BY iteration"
        if not inherited:
            return self.sql(own)
        columns, rows = self._query(own)
        at = columns.index("iteration")
        taken = {row[at] for row in rows}
        _, lineage = self._query(
            "SELECT ancestor, at_iteration FROM run_lineage "
            f"WHERE run_id = {run_id} AND depth > 0 ORDER BY depth"
        )
        upto = None
        for ancestor, branched_at in lineage:
            # A run shares an ancestor's iterations up to the lowest branch point below it.
            upto = branched_at if upto is None else min(upto, branched_at)
            _, theirs = self._query(
                f"SELECT * FROM metrics_wide WHERE run_id = {ancestor} "
                f"AND iteration <= {upto} ORDER BY iteration"
            )
            rows += [row for row in theirs if row[at] not in taken]
            taken |= {row[at] for row in theirs}
        rows.sort(key=lambda row: row[at])
        return _table(columns, rows)
