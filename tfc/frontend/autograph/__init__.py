"""AutoGraph: Python control flow on tensors becomes IR control flow.

``to_graph(f)`` rewrites ``f``'s source so that ``if``/``while``/``for``,
``break``/``continue``/``return`` inside them, ``and``/``or``/``not``,
ternaries, ``print`` and ``assert`` call the runtime in ``operators``; it picks
Python or tensor control flow per statement at run time.
"""
from tfc.frontend.autograph.api import convert, do_not_convert, to_code, to_graph  # noqa: F401
from tfc.frontend.autograph.operators import set_element_type, set_loop_options, stack  # noqa: F401
from tfc.frontend.autograph.transformer import ConversionError  # noqa: F401
