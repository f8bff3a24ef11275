"""tfc.Module: finds the variables and submodules stored in its attributes.

Tracking walks the attributes (in assignment order) and, inside them, lists,
tuples and dicts (in their own order), so ``variables`` comes out in the same
order on every run of the same program. Each tracked object also has a *path*
(``layer1/kernel``, ``layers/0/bias``) used as its checkpoint key.
"""
from __future__ import annotations

from tfc.core.variable import Variable


class Module:
    """Base class of models and layers: ``variables``, ``trainable_variables``,
    ``submodules``. A variable reachable twice is listed once (its first path)."""

    name = None  # a subclass that skips super().__init__() still works
    _not_tracked = frozenset()  # attribute names that hold no model state

    def __init__(self, name: str | None = None):
        self.name = name or _snake(type(self).__name__)

    def _tracked_attributes(self):
        """(name, value) pairs searched for variables and submodules."""
        return [(k, v) for k, v in vars(self).items() if k not in self._not_tracked]

    def _walk(self):
        """Yields (path, object) for every Variable and Module below self, depth
        first, each object once, never descending into a module twice."""
        seen = {id(self)}

        def visit(prefix, value):
            if isinstance(value, Variable):
                if id(value) not in seen:
                    seen.add(id(value))
                    yield prefix, value
            elif isinstance(value, Module):
                if id(value) not in seen:
                    seen.add(id(value))
                    yield prefix, value
                    for k, v in value._tracked_attributes():
                        yield from visit(f"{prefix}/{k}", v)
            elif isinstance(value, (list, tuple)):
                for i, v in enumerate(value):
                    yield from visit(f"{prefix}/{i}", v)
            elif isinstance(value, dict):
                for k, v in value.items():
                    yield from visit(f"{prefix}/{k}", v)

        for k, v in self._tracked_attributes():
            yield from visit(k, v)

    def variables_with_paths(self) -> list:
        """[(path, variable), ...] in tracking order."""
        return [(p, v) for p, v in self._walk() if isinstance(v, Variable)]

    def modules_with_paths(self) -> list:
        """[(path, module), ...] for every module below self."""
        return [(p, m) for p, m in self._walk() if isinstance(m, Module)]

    @property
    def variables(self) -> tuple:
        """Every variable of this module and its submodules, in tracking order."""
        return tuple(v for _, v in self.variables_with_paths())

    @property
    def trainable_variables(self) -> tuple:
        return tuple(v for v in self.variables if v.trainable)

    @property
    def non_trainable_variables(self) -> tuple:
        return tuple(v for v in self.variables if not v.trainable)

    @property
    def submodules(self) -> tuple:
        """Every module below this one (not itself), depth first."""
        return tuple(m for _, m in self.modules_with_paths())

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name or _snake(type(self).__name__)!r}>"


def _snake(name: str) -> str:
    out = []
    for i, c in enumerate(name):
        if c.isupper() and i and not name[i - 1].isupper():
            out.append("_")
        out.append(c.lower())
    return "".join(out)
