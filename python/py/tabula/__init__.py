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

    def metrics(self, run):
        """A run's own iterations in ``metrics_wide``: one row per iteration, a column per
        metric. ``run`` is an id, a name or a hash prefix, as ``tabula show`` takes."""
        run_id = self._run_id(str(run))
        return self.sql(f"SELECT * FROM metrics_wide WHERE run_id = {run_id} ORDER BY iteration")
