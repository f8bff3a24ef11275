"""Converting callables: source → converted AST → a function with the
original's globals, closure cells and defaults, compiled with the original
file name and line numbers so errors point at the user's code."""
from __future__ import annotations

import ast
import copy
import functools
import inspect
import io
import os
import re
import sys
import sysconfig
import textwrap
import tokenize
import types

from tfc.frontend.autograph import operators, transformer

_CODE_CACHE: dict = {}          # original code object -> (converted code, converted AST)
_CONVERTED_CODES: set = set()   # code objects we generated: called as they are
_AG_CELL = types.CellType(operators)

_LIBRARY_DIRS = tuple({os.path.normpath(p) + os.sep for p in (
    sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(transformer.__file__)))),  # tfc
)})
_LIBRARY_MODULES = ("tfc", "numpy", "xdsl", "hypothesis", "pytest", "_pytest")


def _is_library(fn) -> bool:
    mod = getattr(fn, "__module__", None) or ""
    if mod.split(".")[0] in _LIBRARY_MODULES or mod in sys.builtin_module_names:
        return True
    return os.path.normpath(fn.__code__.co_filename).startswith(_LIBRARY_DIRS)


def _parse(fn):
    """The ``def`` or ``lambda`` node of ``fn``, with the file's line numbers."""
    code = fn.__code__
    try:
        lines, first = inspect.findsource(fn)  # not code: its module is found by scanning sys.modules
    except (OSError, TypeError) as e:
        raise transformer.ConversionError(f"cannot convert {fn.__qualname__}: its source is unavailable ({e})")
    if code.co_name == "<lambda>":
        node = _lambda_node(code, "".join(lines[first:]), first)  # read only as far as the lambda goes
    else:
        src = textwrap.dedent("".join(inspect.getblock(lines[first:])))
        tree = ast.parse(src)
        node = tree.body[0]
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            raise transformer.ConversionError(f"cannot find the source of {fn.__qualname__}")
        node.decorator_list = []
        ast.increment_lineno(node, first)
    return node


def _lambda_node(code, src, first):
    """The ``lambda`` node of ``code`` among those starting on the first line of
    ``src`` (the source from that line on): each is parsed from its keyword,
    and the one whose body holds the code's first column (``co_positions``) is it."""
    line = src.split("\n", 1)[0]
    starts = [m.start() for m in re.finditer(r"\blambda\b", line)]
    nodes = [_parse_lambda(src[i:]) for i in starts]  # None where the keyword is not a lambda's (a string)
    names = list(code.co_varnames[:code.co_argcount])
    cols = [p[2] for p in code.co_positions() if p[0] == code.co_firstlineno and p[2]]
    if cols:  # the body starts after its own keyword and before the next one's (UTF-8 columns)
        before = [k for k, i in enumerate(starts) if len(line[:i].encode()) < min(cols)]
        if before and nodes[before[-1]] is not None:
            nodes = [nodes[before[-1]]]
    lams = [n for n in nodes if n is not None and [a.arg for a in n.args.args] == names]
    if len(lams) != 1:
        raise transformer.ConversionError(
            f"cannot convert the lambda at {code.co_filename}:{first + 1}: "
            + ("its source does not parse" if not lams else f"{len(lams)} lambdas on its line are ambiguous"))
    ast.increment_lineno(lams[0], first)
    return lams[0]


def _parse_lambda(src):
    """The lambda that ``src`` starts with, or None: its text ends at the first
    comma, semicolon, closing bracket, ``for`` or line end outside brackets
    after its parameters' colon. Read as a statement first, then as inside a
    bracket (where its body may span lines)."""
    for inside in (False, True):
        node = _lambda_prefix(src, inside)
        if node is not None:
            return node
    return None


def _lambda_prefix(src, inside):
    starts = [0]
    for text_line in src.splitlines(keepends=True):
        starts.append(starts[-1] + len(text_line))
    shift = int(inside)  # the "(" put in front
    depth, params, end = -shift, True, len(src)
    try:
        for tok in tokenize.generate_tokens(io.StringIO("(" * shift + src).readline):
            at = starts[tok.start[0] - 1] + tok.start[1] - (shift if tok.start[0] == 1 else 0)
            if tok.type == tokenize.OP and tok.string in "([{":
                depth += 1
            elif tok.type == tokenize.OP and tok.string in ")]}":
                if depth == 0:
                    end = at
                    break
                depth -= 1
            elif depth == 0 and tok.type == tokenize.OP and tok.string == ":" and params:
                params = False
            elif depth == 0 and not params and (tok.type == tokenize.OP and tok.string in ",;"
                                                 or tok.type == tokenize.NEWLINE
                                                 or tok.type == tokenize.NAME and tok.string == "for"):
                end = at
                break
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    try:
        tree = ast.parse("(" + src[:end].strip() + "\n)", mode="eval")  # "\n": after a comment
    except SyntaxError:
        return None
    return tree.body if isinstance(tree.body, ast.Lambda) else None


def _convert_code(fn):
    """(converted code object, converted node) for ``fn``'s code, cached."""
    code = fn.__code__
    hit = _CODE_CACHE.get(code)
    if hit is not None:
        return hit
    node = _parse(fn)
    if isinstance(node, ast.Lambda):
        node = transformer.convert_lambda(node)
        inner = node
    else:
        node = transformer.convert_function_body(node)
        inner = copy.deepcopy(node)
        # Named apart in the factory: under its own name it would be a local there, and
        # a recursive call (`fact(n - 1)`) a free variable instead of the global it is.
        inner.name = "__ag_converted"
        if "__class__" in code.co_freevars:  # zero-argument super() needs the cell
            inner.body.insert(0, ast.copy_location(ast.Expr(value=ast.Name(id="__class__", ctx=ast.Load())),
                                                   inner.body[0]))
    # A factory whose locals are the original free variables, so the converted
    # function reads the same closure cells (and `ag__`).
    freevars = list(code.co_freevars) + (["ag__"] if "ag__" not in code.co_freevars else [])
    factory = ast.FunctionDef(
        name="__ag_factory", args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=v) for v in freevars],
                                                kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[inner if not isinstance(inner, ast.Lambda) else ast.Return(value=inner)] +
        ([ast.Return(value=ast.Name(id=inner.name, ctx=ast.Load()))] if not isinstance(inner, ast.Lambda) else []),
        decorator_list=[], returns=None, type_params=[])
    # keep every free variable referenced so each stays a cell of the factory
    factory.body.insert(0, ast.Expr(value=ast.Tuple(elts=[ast.Name(id=v, ctx=ast.Load()) for v in freevars],
                                                    ctx=ast.Load())))
    module = ast.Module(body=[factory], type_ignores=[])
    ast.copy_location(factory, node)  # the rest inherit their parents' lines
    ast.fix_missing_locations(module)
    _pin_runtime_calls(module)
    compiled = compile(module, code.co_filename, "exec", dont_inherit=True)
    factory_code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    new_code = next(c for c in factory_code.co_consts if isinstance(c, types.CodeType))
    if not isinstance(node, ast.Lambda):  # tracebacks name the original function
        new_code = new_code.replace(co_name=code.co_name, co_qualname=code.co_qualname)
    _register(new_code)
    hit = (new_code, node)
    _CODE_CACHE[code] = hit
    return hit


def _pin_runtime_calls(tree):
    """Each ``ag__.f(...)`` call's ``ag__.f`` on the call's first line. Python reports
    a method call at the line where its attribute ends: a generated attribute that
    took the location of a whole ``if`` or loop would name its last line instead of
    the statement's (errors from a tensor ``if`` must name the ``if``)."""
    for n in ast.walk(tree):
        f = getattr(n, "func", None)
        if isinstance(n, ast.Call) and isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                and f.value.id == "ag__":
            for part, width in ((f, len(f.attr) + 5), (f.value, 4)):
                part.lineno = part.end_lineno = n.lineno
                part.col_offset = n.col_offset
                part.end_col_offset = n.col_offset + width


def _register(code):
    _CONVERTED_CODES.add(code)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _register(c)


def _convert_function(fn: types.FunctionType) -> types.FunctionType:
    new_code, _ = _convert_code(fn)
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    cells["ag__"] = _AG_CELL
    closure = tuple(cells[v] for v in new_code.co_freevars)
    new = types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__dict__.update(fn.__dict__)
    new.__qualname__ = fn.__qualname__
    new.__doc__ = fn.__doc__
    new.__module__ = fn.__module__
    new.__wrapped__ = fn
    new.__ag_converted__ = True
    return new


def _is_generator(fn) -> bool:
    return bool(fn.__code__.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR))


def converted_or_none(f):
    """The converted form of ``f`` for a call from converted code, or None to
    call ``f`` as it is (library code, builtins, already converted, no source)."""
    if isinstance(f, types.FunctionType):
        if f.__code__ in _CONVERTED_CODES or getattr(f, "__ag_converted__", False):
            return None
        if getattr(f, "__ag_do_not_convert__", False) or _is_library(f) or _is_generator(f):
            return None
        try:
            return _convert_function(f)
        except transformer.ConversionError:
            if _source_available(f):
                raise
            return None
    if isinstance(f, types.MethodType):
        inner = converted_or_none(f.__func__)
        return None if inner is None else types.MethodType(inner, f.__self__)
    if isinstance(f, functools.partial):
        inner = converted_or_none(f.func)
        return None if inner is None else functools.partial(inner, *f.args, **f.keywords)
    if isinstance(f, type) or isinstance(f, (types.BuiltinFunctionType, types.BuiltinMethodType)):
        return None
    call = getattr(type(f), "__call__", None)
    if isinstance(call, types.FunctionType):
        inner = converted_or_none(call)
        return None if inner is None else types.MethodType(inner, f)
    return None


def _source_available(f) -> bool:
    try:
        inspect.findsource(f.__code__)
        return True
    except (OSError, TypeError):
        return False


def underlying_function(f):
    """The Python function that calling ``f`` runs: ``f`` itself, or what a
    partial, a bound method, a staticmethod/classmethod or a callable object
    wraps (None where it is none: a builtin, a class)."""
    seen = 0
    while not isinstance(f, types.FunctionType) and seen < 100:
        seen += 1
        if isinstance(f, functools.partial):
            f = f.func
        elif isinstance(f, (types.MethodType, staticmethod, classmethod)):
            f = f.__func__
        elif hasattr(f, "python_function") and callable(f):  # a tfc.function
            f = f.python_function
        elif isinstance(f, type) or isinstance(f, (types.BuiltinFunctionType, types.BuiltinMethodType)):
            return None
        elif isinstance(getattr(type(f), "__call__", None), types.FunctionType):
            f = type(f).__call__
        else:
            return None
    return f if isinstance(f, types.FunctionType) else None


def callable_name(f) -> str:
    """A name for any callable, for messages: its qualified name, or that of
    what it wraps (``partial(add)``, ``Model.__call__``)."""
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    if isinstance(name, str):
        return name
    inner = underlying_function(f)
    if inner is None:
        return type(f).__name__
    return f"partial({inner.__qualname__})" if isinstance(f, functools.partial) else inner.__qualname__


def check_not_generator(f):
    """A generator (or coroutine) function however wrapped: the clear error."""
    fn = underlying_function(f)
    if fn is not None and _is_generator(fn):
        raise NotImplementedError(
            f"{callable_name(f)} ({fn.__code__.co_filename}:{fn.__code__.co_firstlineno}): "
            f"generators are not supported by AutoGraph or tfc.function")


def to_graph(f):
    """The converted form of ``f``: Python control flow on tensors becomes
    tfc.cond / tfc.while_loop while tracing; with Python values and eager
    tensors it behaves exactly as ``f``. ``f`` is any callable: a function, a
    partial, a bound method, a staticmethod or classmethod, a callable object."""
    check_not_generator(f)
    if isinstance(f, types.FunctionType):
        if f.__code__ in _CONVERTED_CODES or getattr(f, "__ag_converted__", False):
            return f
        return _convert_function(f)
    if isinstance(f, staticmethod):
        return staticmethod(to_graph(f.__func__))
    if isinstance(f, classmethod):
        return classmethod(to_graph(f.__func__))
    if not callable(f):
        raise TypeError(f"to_graph expects a callable, got {type(f).__name__}")
    conv = converted_or_none(f)
    return f if conv is None else conv


def to_code(f) -> str:
    """The readable source of ``f`` after conversion."""
    fn = underlying_function(f)
    if fn is None:
        raise TypeError(f"to_code expects a Python function, got {type(f).__name__}")
    f = getattr(fn, "__wrapped__", fn) if getattr(fn, "__ag_converted__", False) else fn
    _, node = _convert_code(f)
    return ast.unparse(node) + "\n"


def convert(recursive: bool = True):
    """Decorator: ``@tfc.autograph.convert()`` converts the function."""
    def decorate(f):
        conv = to_graph(f)
        if conv is f:
            return f
        functools.update_wrapper(conv, f)
        conv.__ag_converted__ = True
        return conv
    return decorate


def do_not_convert(f):
    """Marks ``f`` to be called as it is from converted code."""
    f.__ag_do_not_convert__ = True
    return f


