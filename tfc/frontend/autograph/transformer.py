"""AST → AST conversion of one function (AutoGraph's converters).

Passes, in order, on the parsed ``def`` (or lambda):

1. ``return`` nested in control flow → ``do_return_``/``retval_`` flags, the
   rest of each enclosing block guarded by ``if not do_return_``; a return in a
   loop also breaks out of it.
2. ``break``/``continue`` → per-loop flags, with the rest of the loop body
   guarded; a loop with ``break`` gets ``not brk_N`` as an extra loop test;
   ``for/else`` and ``while/else`` become ``if not brk_N: <else>``.
3. Liveness of variables (which values are read after each if/loop), so tensor
   control flow carries exactly the variables that are used later.
4. Control flow → calls into the runtime (``ag__``, tfc.frontend.autograph.
   operators): the branches and loop bodies become nested functions that
   update the function's variables through ``nonlocal``; the runtime decides
   per call whether to run them as Python or build tfc.cond / tfc.while_loop.
   Expressions: calls → ``ag__.call``, and/or/not, ternaries, chained
   comparisons, ``assert``, ``lst.append(x)`` statements.

Generated nodes carry the line numbers of the statements they come from, so a
traceback through converted code shows the user's file, line and text.
"""
from __future__ import annotations

import ast
import copy
import re

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LOOPS = (ast.For, ast.While)


class ConversionError(NotImplementedError):
    pass


def _name(id_, ctx=None):
    return ast.Name(id=id_, ctx=ctx or ast.Load())


def _ag(attr):
    return ast.Attribute(value=_name("ag__"), attr=attr, ctx=ast.Load())


def _assign(name, value):
    return ast.Assign(targets=[_name(name, ast.Store())], value=value)


def _const(v):
    return ast.Constant(value=v)


def _not(e):
    return ast.UnaryOp(op=ast.Not(), operand=e)


def _located(nodes, src):
    for n in nodes:
        ast.copy_location(n, src)
        for sub in ast.walk(n):
            if not hasattr(sub, "lineno") and "lineno" in sub._attributes:
                ast.copy_location(sub, src)
    return nodes


def _walk_scope(node):
    """Nodes under ``node`` without entering nested scopes (defs, lambdas, ...)."""
    todo = list(ast.iter_child_nodes(node))
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, _SCOPES):
            todo.extend(ast.iter_child_nodes(n))


def _walk_stmts(stmts):
    for s in stmts:
        yield s
        if not isinstance(s, _SCOPES):
            yield from _walk_scope(s)


def assigned_names(stmts) -> set:
    """Names bound by ``stmts`` in the current scope (maybe, on some path)."""
    out = set()
    for n in _walk_stmts(stmts):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out.add((a.asname or a.name).split(".")[0])
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        elif isinstance(n, ast.NamedExpr):
            out.add(n.target.id)
        elif _is_list_append(n):
            out.add(n.value.func.value.id)  # becomes `lst = ag__.list_append(lst, x)`
        elif _list_pop_of(n):
            out.add(_list_pop_of(n))  # its statement starts with `lst = ag__.list_pop(lst)`
    return out


def _is_list_append(n) -> bool:
    return getattr(n, "_ag_append", False)


def _list_pop_of(n):
    """The list whose ``lst.pop()`` call ``n`` is, where the conversion rewrites it
    (``_mark_list_pops``); else None."""
    return getattr(n, "_ag_pop", None)


# statements whose one pop of a list may run first: they hold no other statement
_SIMPLE_STMTS = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)
# where a call may run zero times or later than the statement's other parts
_DEFERRING = (ast.BoolOp, ast.IfExp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _mark_list_pops(fn, lists):
    """``lst.pop()`` of a list the function appends to (maybe a tensor list) in a
    simple statement becomes ``lst = ag__.list_pop(lst)`` before the statement and
    ``ag__.popped(lst)`` in it (as TensorFlow converts it): the list is then
    loop and branch state, and a tensor list pops its last element. Only where
    that runs the pop in Python's order: one pop in the statement, not under a
    condition or a lambda, and no other use of the list in it. Any other pop of
    such a list is ``ag__.list_pop_call(lst, ...)`` (a tensor list cannot pop there:
    a clear error, not the AttributeError of its missing ``pop``)."""
    def is_pop(n) -> bool:
        return isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "pop" and \
            isinstance(n.func.value, ast.Name) and n.func.value.id in lists

    for n in _walk_scope(fn):
        if is_pop(n):
            n._ag_pop_call = True
    for stmt in _walk_scope(fn):
        if not isinstance(stmt, _SIMPLE_STMTS):
            continue
        nodes = list(ast.walk(stmt))
        pops = [n for n in nodes if is_pop(n) and not n.args and not n.keywords]
        if len(pops) != 1:
            continue
        (call,) = pops
        name = call.func.value.id
        deferred = {id(x) for d in nodes if isinstance(d, _DEFERRING) for x in ast.walk(d)}
        uses = [n for n in nodes if isinstance(n, ast.Name) and n.id == name]
        if id(call) not in deferred and uses == [call.func.value]:
            call._ag_pop = name
            del call._ag_pop_call


def _looks_like_append(n) -> bool:
    v = getattr(n, "value", None)
    return (isinstance(n, ast.Expr) and isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
            and v.func.attr == "append" and isinstance(v.func.value, ast.Name) and len(v.args) == 1
            and not v.keywords)


def used_names(node) -> set:
    """Every name read under ``node``, nested scopes included (conservative)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


# Composite symbols: ``d['a']``, ``o.v``, ``self.state['h']``, ``a.b.c``, ``d[k]`` (a
# name, then attributes and subscripts by a constant or a variable) are state of tensor
# control flow like names.

def _constant_key(e) -> bool:
    return isinstance(e, ast.Constant) and type(e.value) in (str, int)


def _pure_key(e) -> bool:
    """A key expression the runtime may evaluate again without side effects:
    names, constants, attributes, tuples and arithmetic of them (``k``, ``i - 1``,
    ``o.k``, ``("a", j)``)."""
    if isinstance(e, (ast.Name, ast.Constant)):
        return True
    if isinstance(e, ast.Attribute):
        return _pure_key(e.value)
    if isinstance(e, ast.Tuple):
        return all(_pure_key(x) for x in e.elts)
    if isinstance(e, ast.UnaryOp):
        return _pure_key(e.operand)
    if isinstance(e, ast.BinOp):
        return _pure_key(e.left) and _pure_key(e.right)
    return False


def _chain(n):
    """The symbol an expression names (``"d['a']"``, ``"d[k]"``, ``"lst[i - 1]"``), or
    None when it is not one."""
    if isinstance(n, ast.Name):
        return n.id
    if isinstance(n, ast.Attribute):
        b = _chain(n.value)
        return None if b is None else f"{b}.{n.attr}"
    if isinstance(n, ast.Subscript) and _pure_key(n.slice):
        b = _chain(n.value)
        key = repr(n.slice.value) if _constant_key(n.slice) else ast.unparse(n.slice)
        return None if b is None else f"{b}[{key}]"
    return None


def _variable_keys(n) -> set:
    """The names read by the keys along the symbol ``n`` (``k`` in ``d[k].v``)."""
    out = set()
    while isinstance(n, (ast.Attribute, ast.Subscript)):
        if isinstance(n, ast.Subscript) and not _constant_key(n.slice):
            out |= used_names(n.slice)
        n = n.value
    return out


def composite_stores(stmts) -> dict:
    """Composite symbols set or deleted by ``stmts`` (current scope): symbol -> target."""
    out = {}
    for n in _walk_stmts(stmts):
        if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            sym = _chain(n)
            if sym is not None:
                out.setdefault(sym, n)
    return out


def _under(a, b) -> bool:
    """Whether path ``a`` is ``b`` or lies under it (``d['a']`` under ``d``)."""
    return a == b or (a.startswith(b) and a[len(b)] in ".[#")


def _may_alias(path):
    """``path`` up to its first variable key: ``d[k]`` may be any item of ``d``."""
    m = re.search(r"\[(?!['\"]|\d+\])", path)  # a key that is no str or int constant
    return path if m is None else path[:m.start()]


def is_live(sym, live) -> bool:
    """Whether symbol ``sym`` is needed by the read paths ``live``: a path under it,
    or one it lies under (a whole object read). ``p#`` needs only the object at ``p``
    (the base of a store), not what it holds. A variable key may name any item."""
    sym = _may_alias(sym)
    return any(_under(q, sym) or (q[-1] != "#" and _under(sym, q))
               for q in (_may_alias(p) for p in live))


def used_paths(node) -> set:
    """What ``node`` reads, as paths: names and composite symbols read, the
    objects a method is called on (read whole), ``base#`` for the base of a
    composite store. Nested scopes included (conservative)."""
    out = set()
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            c = _chain(n.func.value)
            if c is not None:  # obj.method(...): the method may read all of obj
                out.add(c)
                out |= _variable_keys(n.func.value)
                todo.extend(n.args)
                todo.extend(k.value for k in n.keywords)
                continue
        if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript)):
            c = _chain(n)
            if c is not None:
                out |= _variable_keys(n)
                if isinstance(n.ctx, ast.Load):
                    out.add(c)
                elif not isinstance(n, ast.Name):
                    out.add(_chain(n.value) + "#")
                continue
        todo.extend(ast.iter_child_nodes(n))
    return out


def _kill(live, stores) -> set:
    return {p for p in live if not any(_under(p, s) for s in stores)}


def _contains(stmts, kinds, through_loops: bool):
    """Whether ``stmts`` contain a node of ``kinds`` (not in nested scopes;
    not inside nested loops unless ``through_loops``)."""
    todo = list(stmts)
    while todo:
        n = todo.pop()
        if isinstance(n, kinds):
            return True
        if isinstance(n, _SCOPES):
            continue
        if isinstance(n, _LOOPS) and not through_loops:
            todo.extend(n.orelse)  # the else of a nested loop belongs to our loop
            continue
        todo.extend(ast.iter_child_nodes(n))
    return False


class _Names:
    def __init__(self):
        self.n = 0

    def new(self, base):
        self.n += 1
        return f"{base}_{self.n}"


# -- 1 and 2: returns, breaks, continues → flags ----------------------------------

def _has(s, kinds, through_loops: bool) -> bool:
    """Whether statement ``s`` contains a ``kinds`` statement that jumps out of
    it (not in nested scopes; a nested loop's own break/continue do not count)."""
    todo = [s]
    while todo:
        n = todo.pop()
        if isinstance(n, kinds):
            return True
        if isinstance(n, _SCOPES) or not isinstance(n, (ast.stmt, ast.excepthandler)):
            continue
        if isinstance(n, _LOOPS) and n is not s and not through_loops:
            todo.extend(n.orelse)
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            todo.extend(getattr(n, field, None) or [])
    return False


def _map_blocks(s, fn, loop_fn=None):
    """A copy of compound statement ``s`` with ``fn`` applied to each block
    (``loop_fn`` to a loop's body)."""
    s = copy.copy(s)
    if isinstance(s, _LOOPS):
        s.body = (loop_fn or fn)(s.body)
        s.orelse = fn(s.orelse)
        return s
    for field in ("body", "orelse", "finalbody"):
        if getattr(s, field, None):
            setattr(s, field, fn(getattr(s, field)))
    if isinstance(s, ast.Try):
        s.handlers = [copy.copy(h) for h in s.handlers]
        for h in s.handlers:
            h.body = fn(h.body)
    return s


def _guarded(rest, flag, src):
    return _located([ast.If(test=_not(_name(flag)), body=rest, orelse=[])], src) if rest else []


def _lower_jump(stmts, kind, flag):
    """break or continue of the current loop → ``flag = True``; what follows in
    each enclosing block of the loop body runs only ``if not flag``."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, kind):
            return out + _located([_assign(flag, _const(True))], s)
        if _has(s, kind, through_loops=False):
            if isinstance(s, _LOOPS):
                s = copy.copy(s)
                s.orelse = _lower_jump(s.orelse, kind, flag)
            else:
                s = _map_blocks(s, lambda b: _lower_jump(b, kind, flag))
            return out + [s] + _guarded(_lower_jump(stmts[i + 1:], kind, flag), flag, s)
        out.append(s)
    return out


def _always_returns(stmts) -> bool:
    """Whether every path through ``stmts`` ends in return or raise."""
    for s in stmts:
        if isinstance(s, (ast.Return, ast.Raise)):
            return True
        if isinstance(s, ast.If) and _always_returns(s.body) and _always_returns(s.orelse):
            return True
        if isinstance(s, (ast.With, ast.AsyncWith)) and _always_returns(s.body):
            return True
        if isinstance(s, ast.While) and isinstance(s.test, ast.Constant) and s.test.value is True and \
                not _contains(s.body, ast.Break, through_loops=False):
            return True  # `while True:` without a break ends only by a return (or raise)
        if isinstance(s, ast.Try) and (_always_returns(s.finalbody) or _always_returns(s.body + s.orelse) and all(
                _always_returns(h.body) for h in s.handlers)):
            return True
    return False


class _ReturnLowering:
    """``return x`` nested in control flow → ``do_return_ = True; retval_ = x``
    (and ``break`` inside loops); the function ends with ``return retval_``."""

    flag, value = "do_return_", "retval_"

    def run(self, fn):
        if not any(_has(s, ast.Return, True) for s in fn.body if not isinstance(s, ast.Return)):
            return
        # When every path returns, the return value starts as a placeholder that tensor
        # control flow may fill with zeros of the right type (the flags guard its use);
        # otherwise it starts as None, as falling off the end returns None.
        init = ast.Attribute(value=_name("ag__"), attr="UNDEFINED_RETURN", ctx=ast.Load()) \
            if _always_returns(fn.body) else _const(None)
        head = _located([_assign(self.flag, _const(False)), _assign(self.value, init)], fn.body[0])
        tail = _located([ast.Return(value=_name(self.value))], fn.body[-1])
        self.finally_flags = 0
        fn.body = head + self.lower(fn.body, False, self.flag) + tail

    def lower(self, stmts, in_loop, guard):
        """``guard``: the flag that says a return ran in this block (``do_return_``, or
        in a ``finally`` a flag of its own: a return in ``try`` does not skip the rest
        of ``finally``, while one in ``finally`` overrides it)."""
        out = []
        for i, s in enumerate(stmts):
            if isinstance(s, ast.Return):
                # the value first: a return whose value raises does not return
                new = [_assign(self.value, s.value or _const(None)), _assign(self.flag, _const(True))]
                if guard != self.flag:
                    new.append(_assign(guard, _const(True)))
                return out + _located(new + ([ast.Break()] if in_loop else []), s)
            if _has(s, ast.Return, through_loops=True):
                s = _map_blocks(s, lambda b: self.lower(b, in_loop, guard), lambda b: self.lower(b, True, guard))
                if isinstance(s, ast.Try) and any(_has(f, ast.Return, True) for f in stmts[i].finalbody):
                    s = self._returning_finally(s, stmts[i].finalbody, in_loop)
                out.append(s)
                if in_loop and isinstance(s, _LOOPS):
                    out += _located([ast.If(test=_name(guard), body=[ast.Break()], orelse=[])], s)
                return out + _guarded(self.lower(stmts[i + 1:], in_loop, guard), guard, s)
            out.append(s)
        return out

    def _returning_finally(self, s, finalbody, in_loop):
        """``try`` whose ``finally`` returns: the ``finally`` gets a flag of its own,
        and an exception in flight is dropped when it returned (Python's rule), by
        an enclosing ``except`` that re-raises only when it did not."""
        self.finally_flags += 1
        fin = f"fin_return_{self.finally_flags}"
        s.finalbody = _located([_assign(fin, _const(False))], finalbody[0]) + self.lower(finalbody, in_loop, fin)
        drop = ast.ExceptHandler(type=_name("BaseException"), name=None, body=[
            ast.If(test=_not(_name(fin)), body=[ast.Raise(exc=None, cause=None)], orelse=[])])
        return _located([ast.Try(body=[s], handlers=[drop], orelse=[], finalbody=[])], s)[0]


class _JumpLowering(ast.NodeTransformer):
    """break/continue → flags, per loop, innermost loops first."""

    def __init__(self, names: _Names):
        self.names = names

    def visit_FunctionDef(self, node):
        return node  # nested defs are lowered when they are converted themselves

    def _loop(self, node):
        node = self.generic_visit(node)  # inner loops first
        prefix = []
        if _contains(node.body, ast.Continue, through_loops=False):
            cont = self.names.new("cont")
            node.body = _located([_assign(cont, _const(False))], node) + _lower_jump(
                node.body, ast.Continue, cont)
        after = []
        if _contains(node.body, ast.Break, through_loops=False):
            brk = self.names.new("brk")
            prefix = _located([_assign(brk, _const(False))], node)
            node.body = _lower_jump(node.body, ast.Break, brk)
            node._ag_extra_test = brk
            if isinstance(node, ast.While):
                node.test = ast.copy_location(ast.BoolOp(op=ast.And(), values=[_not(_name(brk)), node.test]),
                                              node.test)
            if node.orelse:
                after = _located([ast.If(test=_not(_name(brk)), body=node.orelse, orelse=[])], node)
        elif node.orelse:
            after = node.orelse
        if node.orelse:
            node._ag_orelse = True
            node.orelse = []
        return prefix + [node] + after

    visit_For = _loop
    visit_While = _loop


# -- 3: liveness (of paths: see used_paths) ------------------------------------------

def _stores(s) -> set:
    return assigned_names([s]) | set(composite_stores([s]))


def _live_block(stmts, out: set) -> set:
    live = set(out)
    for s in reversed(stmts):
        live = _live_stmt(s, live)
    return live


def _live_stmt(s, out: set) -> set:
    if isinstance(s, ast.If):
        s._ag_live_out = set(out)
        return used_paths(s.test) | _live_block(s.body, out) | _live_block(s.orelse, out)
    if isinstance(s, ast.While):
        s._ag_live_out = set(out)
        live = set(out) | used_paths(s.test)
        for _ in range(10):
            new = set(out) | used_paths(s.test) | _live_block(s.body, live)
            if new == live:
                break
            live = new
        s._ag_live_in = live
        return live
    if isinstance(s, ast.For):
        s._ag_live_out = set(out)
        targets = _stores(ast.Assign(targets=[s.target], value=_const(None)))
        extra = {s._ag_extra_test} if getattr(s, "_ag_extra_test", None) else set()
        live = set(out) | extra
        for _ in range(10):
            new = set(out) | extra | _kill(_live_block(s.body, live), targets)
            if new == live:
                break
            live = new
        s._ag_live_in = live
        return live | used_paths(s.iter) | used_paths(s.target)
    if isinstance(s, ast.Try):
        after = _live_block(s.finalbody, out)
        live = _live_block(s.body + s.orelse, after) | after
        for h in s.handlers:
            live |= _live_block(h.body, after) | (used_paths(h.type) if h.type else set())
        return live
    if isinstance(s, ast.With):
        # `with ... as t` binds t before the body: t is not live on entry
        # (a tape opened in a loop body is no loop variable read before set)
        u = set().union(*(used_paths(i.context_expr) for i in s.items))
        bound = [_stores(ast.Assign(targets=[i.optional_vars], value=_const(None)))
                 for i in s.items if i.optional_vars is not None]
        return u | _kill(_live_block(s.body, out), set().union(*bound))
    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return _kill(out, {s.name}) | used_paths(s)
    uses = used_paths(s)
    if isinstance(s, ast.AugAssign):
        c = _chain(s.target)
        if c is not None:
            uses.add(c)
    return _kill(out, _stores(s)) | uses


# -- 4: control flow and expressions → runtime calls -----------------------------

class _ControlFlow(ast.NodeTransformer):
    def __init__(self, names: _Names, globals_: set, locals_: set = frozenset(), lists: set = frozenset()):
        self.names = names
        self.globals = globals_
        self.locals = locals_  # the function's own variables (and nonlocal ones)
        self.lists = lists  # local lists appended to (maybe tensor lists)

    def visit(self, node):
        if isinstance(node, ast.stmt) and not any(isinstance(c, ast.stmt) for c in ast.iter_child_nodes(node)):
            call = next((n for n in ast.walk(node) if _list_pop_of(n)), None)
            if call is not None:
                # lst.pop() → lst = ag__.list_pop(lst) first, then ag__.popped(lst) in its place
                name = call._ag_pop
                del call._ag_pop
                pop = _located([_assign(name, ast.Call(func=_ag("list_pop"), args=[
                    _name(name), _const(name), _const(node.lineno)], keywords=[]))], node)
                call.func, call.args, call.keywords = _ag("popped"), [_name(name)], []
                return pop + _as_list(super().visit(node))
        return super().visit(node)

    def _list_item(self, node) -> bool:
        return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
            node.value.id in self.lists and not isinstance(node.slice, ast.Slice)

    def visit_Subscript(self, node):
        node = self.generic_visit(node)
        if self._list_item(node) and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Call(func=_ag("get_item"), args=[node.value, node.slice], keywords=[]),
                                     node)
        return node

    def visit_Assign(self, node):
        t = node.targets[0]
        if len(node.targets) == 1 and self._list_item(t):
            # lst[i] = x → lst = ag__.set_item(lst, i, x): a tensor list is a value
            value, key = self.visit(node.value), self.visit(t.slice)
            return ast.copy_location(_assign(t.value.id, ast.Call(func=_ag("set_item"), args=[
                _name(t.value.id), key, value], keywords=[])), node)
        return self.generic_visit(node)

    # expressions ---------------------------------------------------------------
    def visit_Call(self, node):
        node = self.generic_visit(node)
        f = node.func
        if getattr(node, "_ag_pop_call", False):
            return ast.copy_location(ast.Call(func=_ag("list_pop_call"), args=[f.value, _const(f.value.id),
                                                                                _const(node.lineno)] + node.args,
                                              keywords=node.keywords), node)
        if isinstance(f, ast.Name) and f.id in ("super", "locals", "globals", "vars", "eval", "exec"):
            return node
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "ag__":
            return node
        fn = "iter_call" if getattr(node, "_ag_loop_iter", False) else "call"
        return ast.copy_location(ast.Call(func=_ag(fn), args=[f] + node.args, keywords=node.keywords), node)

    def visit_BoolOp(self, node):
        node = self.generic_visit(node)
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        return ast.copy_location(ast.Call(func=_ag(fn), args=[self._thunk(v) for v in node.values], keywords=[]),
                                 node)

    def visit_UnaryOp(self, node):
        node = self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(ast.Call(func=_ag("not_"), args=[node.operand], keywords=[]), node)
        return node

    def visit_IfExp(self, node):
        node = self.generic_visit(node)
        return ast.copy_location(ast.Call(func=_ag("if_exp"), args=[
            node.test, self._thunk(node.body), self._thunk(node.orelse)], keywords=[]), node)

    def visit_Compare(self, node):
        node = self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        # a < b < c: each operand evaluated at most once, lazily, like Python
        ops = ast.Tuple(elts=[_const(type(o).__name__) for o in node.ops], ctx=ast.Load())
        return ast.copy_location(ast.Call(func=_ag("compare_chain"), args=[
            node.left, ops] + [self._thunk(c) for c in node.comparators], keywords=[]), node)

    @staticmethod
    def _thunk(e):
        return ast.copy_location(ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                                               kw_defaults=[], defaults=[]), body=e), e)

    # statements --------------------------------------------------------------------
    def visit_Assert(self, node):
        node = self.generic_visit(node)
        msg = self._thunk(node.msg) if node.msg is not None else _const(None)
        return ast.copy_location(ast.Expr(value=ast.Call(func=_ag("assert_"), args=[
            node.test, msg, _const(node.lineno)], keywords=[])), node)

    def visit_Expr(self, node):
        v = node.value
        if _is_list_append(node):
            # lst.append(x) → lst = ag__.list_append(lst, x): the list becomes loop state
            name = v.func.value.id
            arg = self.visit(v.args[0])
            return ast.copy_location(_assign(name, ast.Call(func=_ag("list_append"), args=[
                _name(name), arg, _const(name), _const(node.lineno)], keywords=[])), node)
        return self.generic_visit(node)

    def visit_FunctionDef(self, node):
        # a nested def: its own control flow is converted with its own scope
        return convert_function_body(node, self.names)

    def _state(self, node, stmts):
        assigned = assigned_names(stmts)
        stores = composite_stores(stmts)
        # An item whose key the statement changes (``lst[i]`` in a loop over i) names
        # another element each time: the object holding it is the state (a variable of
        # this function; otherwise the runtime refuses the changing key).
        changing = assigned
        for n in _walk_stmts(stmts):  # d[f(x)] = ..., lst[1:3] = ...: the holder (a variable) is the state
            if isinstance(n, ast.Subscript) and isinstance(n.ctx, (ast.Store, ast.Del)) and (
                    _chain(n) is None or self._list_item(n)):
                base = n.value
                if isinstance(base, ast.Name) and base.id in self.locals:
                    assigned = assigned | {base.id}
                elif not isinstance(base, ast.Name) and _chain(base) is not None:
                    stores.setdefault(_chain(base), base)
        for sym, t in list(stores.items()):
            base = t
            while _variable_keys(base) & changing:
                base = base.value
            if base is t or isinstance(base, ast.Name) and base.id not in self.locals:
                continue
            del stores[sym]
            if isinstance(base, ast.Name):
                assigned = assigned | {base.id}
            else:
                stores.setdefault(_chain(base), base)
        names = sorted(assigned - self.globals)
        # A composite whose base the statement rebinds travels with that base.
        comps = {sym: t for sym, t in stores.items()
                 if not any(o != sym and _under(sym, o) for o in list(assigned) + list(stores))}
        live_out = getattr(node, "_ag_live_out", set())
        live_in = getattr(node, "_ag_live_in", set())
        return names, comps, live_out, live_in

    @staticmethod
    def _live(names, comps, live):
        return [n for n in list(names) + list(comps) if is_live(n, live)]

    @staticmethod
    def _comps(comps, src):
        """``composites=(("d['a']", lambda: d, 'a', True), ...)``: how the runtime
        reads and writes each composite symbol."""
        elts = []
        for sym in sorted(comps):
            t = comps[sym]
            base = copy.deepcopy(t.value)
            for n in ast.walk(base):
                if hasattr(n, "ctx"):
                    n.ctx = ast.Load()
            item = isinstance(t, ast.Subscript)
            # a variable key is read when the runtime reads or writes the item
            if item and not _constant_key(t.slice):
                key_expr = copy.deepcopy(t.slice)
                for n in ast.walk(key_expr):
                    if hasattr(n, "ctx"):
                        n.ctx = ast.Load()
                key = _ControlFlow._thunk(key_expr)
            else:
                key = _const(t.slice.value if item else t.attr)
            elts.append(ast.Tuple(elts=[_const(sym), _ControlFlow._thunk(base), key, _const(item)],
                                  ctx=ast.Load()))
        kw = [ast.keyword(arg="composites", value=ast.Tuple(elts=elts, ctx=ast.Load()))] if elts else []
        return _located(kw, src)

    def _body_fn(self, name, stmts, names, src, args=()):
        decls = []
        nonlocal_names = [n for n in names if n not in self.globals]
        glob = sorted(assigned_names(stmts) & self.globals)
        if nonlocal_names:
            decls.append(ast.Nonlocal(names=nonlocal_names))
        if glob:
            decls.append(ast.Global(names=glob))
        body = decls + (stmts or [ast.Pass()])
        fn = ast.FunctionDef(name=name, args=ast.arguments(
            posonlyargs=[], args=[ast.arg(arg=a) for a in args], kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=body, decorator_list=[], returns=None, type_params=[])
        return _located([fn], src)[0]

    @staticmethod
    def _strs(names):
        return ast.Tuple(elts=[_const(n) for n in sorted(names)], ctx=ast.Load())

    def visit_If(self, node):
        names, comps, live_out, _ = self._state(node, node.body + node.orelse)
        kw = self._comps(comps, node)
        node = self.generic_visit(node)
        i = self.names.n = self.names.n + 1
        body = self._body_fn(f"if_body_{i}", node.body, names, node)
        orelse = self._body_fn(f"else_body_{i}", node.orelse, names, node)
        call = ast.Expr(value=ast.Call(func=_ag("if_stmt"), args=[
            node.test, _name(body.name), _name(orelse.name), self._strs(names),
            self._strs(self._live(names, comps, live_out)), _const(node.lineno)], keywords=kw))
        return _located([body, orelse, call], node)

    def visit_While(self, node):
        names, comps, live_out, live_in = self._state(node, node.body)
        kw = self._comps(comps, node)
        orelse = getattr(node, "_ag_orelse", False)
        node = self.generic_visit(node)
        i = self.names.n = self.names.n + 1
        test = self._body_fn(f"loop_test_{i}", [ast.Return(value=node.test)], [], node)
        body = self._body_fn(f"loop_body_{i}", node.body, names, node)
        if orelse:
            kw.append(ast.keyword(arg="orelse", value=_const(True)))
        call = ast.Expr(value=ast.Call(func=_ag("while_stmt"), args=[
            _name(test.name), _name(body.name), self._strs(names),
            self._strs(self._live(names, comps, live_out | live_in)), _const(node.lineno)], keywords=kw))
        return _located([test, body, call], node)

    def visit_For(self, node):
        target_assign = ast.Assign(targets=[node.target], value=_name("itr"))
        names, comps, live_out, live_in = self._state(node, [target_assign] + node.body)
        comp_kw = self._comps(comps, node)
        extra = getattr(node, "_ag_extra_test", None)
        orelse = getattr(node, "_ag_orelse", False)
        if isinstance(node.iter, ast.Call):
            node.iter._ag_loop_iter = True  # `for i in tfc.range(n)`: see ag__.iter_call
        node = self.generic_visit(node)
        i = self.names.n = self.names.n + 1
        body = self._body_fn(f"loop_body_{i}", [_located([target_assign], node)[0]] + node.body, names, node,
                             args=("itr",))
        extra_test = self._thunk(ast.Call(func=_ag("not_"), args=[_name(extra)], keywords=[])) if extra else None
        kw = [ast.keyword(arg="extra_test", value=extra_test)] if extra else []
        if orelse:
            kw.append(ast.keyword(arg="orelse", value=_const(True)))
        targets = sorted(assigned_names([target_assign]) & set(self._live(names, {}, live_out)))
        if targets:  # a target read after the loop: zeros where a tensor loop did not run (TensorFlow's rule)
            kw.append(ast.keyword(arg="targets", value=self._strs(targets)))
        call = ast.Expr(value=ast.Call(func=_ag("for_stmt"), args=[
            node.iter, _name(body.name), self._strs(names),
            self._strs(self._live(names, comps, live_out | live_in)), _const(node.lineno)],
            keywords=kw + comp_kw))
        return _located([body, call], node)

    def visit_AsyncFor(self, node):
        raise ConversionError(f"line {node.lineno}: async for is not supported by AutoGraph")


def _check_supported(fn):
    for n in _walk_scope(fn):
        if isinstance(n, ast.Try) and _contains(n.finalbody, (ast.Break, ast.Continue), through_loops=False):
            # it would cancel a pending return or exception (PEP 765 deprecates it)
            raise ConversionError(
                f"line {n.lineno}: `break` or `continue` in a `finally` block is not supported by AutoGraph")
        if isinstance(n, (ast.Yield, ast.YieldFrom)):
            raise ConversionError(
                f"line {n.lineno}: generators are not supported by AutoGraph (function {fn.name!r})")
        if isinstance(n, (ast.Await, ast.AsyncWith, ast.AsyncFor)):
            raise ConversionError(f"line {n.lineno}: async code is not supported by AutoGraph")


def convert_function_body(fn: ast.FunctionDef, names: _Names | None = None) -> ast.FunctionDef:
    """Converts ``fn`` (and the defs nested in it) in place; returns it."""
    names = names or _Names()
    _check_supported(fn)
    globals_ = set()
    nonlocals = set()
    for n in _walk_scope(fn):
        if isinstance(n, ast.Global):
            globals_.update(n.names)
        elif isinstance(n, ast.Nonlocal):
            nonlocals.update(n.names)
    params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    params |= {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a}
    # `lst.append(x)` on a local list is rewritten to `lst = ag__.list_append(lst, x)`
    local = assigned_names(fn.body) | params
    for n in _walk_scope(fn):
        if _looks_like_append(n) and n.value.func.value.id in local - globals_ - nonlocals:
            n._ag_append = True
    _mark_list_pops(fn, {n.value.func.value.id for n in _walk_scope(fn) if _is_list_append(n)})
    _ReturnLowering().run(fn)
    fn.body = [s for stmt in fn.body for s in _as_list(_JumpLowering(names).visit(stmt))]
    _live_block(fn.body, set())
    # Every local must be bound in this scope at compile time for the branch
    # and loop functions' `nonlocal`; `if False:` binds without running.
    top = assigned_names([s for s in fn.body if not isinstance(
        s, (ast.If, ast.For, ast.While, ast.Try, ast.With))])
    locals_ = sorted(assigned_names(fn.body) - globals_ - nonlocals - params - top)
    # lists this function appends to may become tensor lists: their items are read and
    # set through the runtime (``lst[i]``, ``lst[i] = x``)
    lists = {n.value.func.value.id for n in _walk_scope(fn) if _is_list_append(n)}
    cf = _ControlFlow(names, globals_, (assigned_names(fn.body) | params | nonlocals) - globals_, lists)
    fn.body = [s for stmt in fn.body for s in _as_list(cf.visit(stmt))]
    if locals_:
        bind = ast.If(test=_const(False), body=[ast.Assign(
            targets=[_name(n, ast.Store()) for n in locals_], value=_const(None))], orelse=[])
        doc = fn.body[:1] if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(
            getattr(fn.body[0], "value", None), ast.Constant) and isinstance(fn.body[0].value.value, str) else []
        fn.body = doc + _located([bind], fn.body[0]) + fn.body[len(doc):]
    return fn


def _as_list(x):
    return x if isinstance(x, list) else [x]


def convert_lambda(lam: ast.Lambda) -> ast.Lambda:
    _check_no_yield = [n for n in ast.walk(lam.body) if isinstance(n, (ast.Yield, ast.YieldFrom))]
    if _check_no_yield:
        raise ConversionError(f"line {lam.lineno}: generators are not supported by AutoGraph")
    lam.body = _ControlFlow(_Names(), set()).visit(lam.body)
    return lam
