"""Converting callables: source → converted AST → a function with the
original's globals, closure cells and defaults, compiled with the original
file name and line numbers so errors point at the user's code."""
from __future__ import annotations

import ast
import copy
import functools
import inspect
import os
import sys
import sysconfig
import textwrap
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
        lines, first = inspect.findsource(code)
    except (OSError, TypeError) as e:
        raise transformer.ConversionError(f"cannot convert {fn.__qualname__}: its source is unavailable ({e})")
    if code.co_name == "<lambda>":
        block = inspect.getblock(lines[first:])
        src = textwrap.dedent("".join(block))
        tree = _parse_fragment(src)
        lams = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
        names = list(code.co_varnames[:code.co_argcount])
        lams = [n for n in lams if [a.arg for a in n.args.args] == names] or lams
        if len(lams) != 1:
            raise transformer.ConversionError(
                f"cannot convert the lambda at {code.co_filename}:{first + 1}: "
                f"{len(lams)} lambdas on its line are ambiguous")
        node = lams[0]
    else:
        src = textwrap.dedent("".join(inspect.getblock(lines[first:])))
        tree = ast.parse(src)
        node = tree.body[0]
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            raise transformer.ConversionError(f"cannot find the source of {fn.__qualname__}")
        node.decorator_list = []
    ast.increment_lineno(node, first)
    return node


def _parse_fragment(src):
    for candidate in (src, "(" + src.strip() + ")", src.strip().rstrip(",)")):
        try:
            return ast.parse(candidate)
        except SyntaxError:
            continue
    # a lambda in the middle of a multi-line expression: take it from 'lambda'
    i = src.index("lambda")
    for j in range(len(src), i, -1):
        try:
            return ast.parse(src[i:j])
        except SyntaxError:
            continue
    raise transformer.ConversionError("cannot parse the source of a lambda")


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
    compiled = compile(module, code.co_filename, "exec", dont_inherit=True)
    factory_code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    new_code = next(c for c in factory_code.co_consts if isinstance(c, types.CodeType))
    _register(new_code)
    hit = (new_code, node)
    _CODE_CACHE[code] = hit
    return hit


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


def to_graph(f):
    """The converted form of ``f``: Python control flow on tensors becomes
    tfc.cond / tfc.while_loop while tracing; with Python values and eager
    tensors it behaves exactly as ``f``."""
    if isinstance(f, types.FunctionType):
        if f.__code__ in _CONVERTED_CODES or getattr(f, "__ag_converted__", False):
            return f
        if _is_generator(f):
            raise NotImplementedError(
                f"{f.__qualname__} ({f.__code__.co_filename}:{f.__code__.co_firstlineno}): "
                f"generators are not supported by AutoGraph")
        return _convert_function(f)
    conv = converted_or_none(f)
    if conv is None:
        if isinstance(f, (types.MethodType, functools.partial)) or callable(f):
            return f
        raise TypeError(f"to_graph expects a callable, got {type(f).__name__}")
    return conv


def to_code(f) -> str:
    """The readable source of ``f`` after conversion."""
    while isinstance(f, (types.MethodType, functools.partial)):
        f = f.__func__ if isinstance(f, types.MethodType) else f.func
    if not isinstance(f, types.FunctionType):
        call = getattr(type(f), "__call__", None)
        if not isinstance(call, types.FunctionType):
            raise TypeError(f"to_code expects a Python function, got {type(f).__name__}")
        f = call
    f = getattr(f, "__wrapped__", f) if getattr(f, "__ag_converted__", False) else f
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


