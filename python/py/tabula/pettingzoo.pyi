from os import PathLike
from typing import Any, Optional, Union

import numpy as np
import numpy.typing as npt
from pettingzoo import AECEnv

from . import Game, State

def env(
    variant: str,
    seed: Optional[int] = None,
    solve: bool = False,
    db: Optional[Union[str, PathLike[str]]] = None,
    exact_values: bool = True,
    render_mode: Optional[str] = None,
) -> TabulaEnv: ...

class TabulaEnv(AECEnv):
    game: Game
    state: Optional[State]
    def __init__(
        self,
        variant: str,
        seed: Optional[int] = None,
        solve: bool = False,
        db: Optional[Union[str, PathLike[str]]] = None,
        exact_values: bool = True,
        render_mode: Optional[str] = None,
    ) -> None: ...
    def observe(self, agent: str) -> dict[str, npt.NDArray[Any]]: ...
    def reset(self, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None) -> None: ...
    def step(self, action: Optional[int]) -> None: ...
    def render(self) -> str: ...
