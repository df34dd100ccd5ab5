"""The check the compiled-training tests share: a compiled program takes the interpreter's
steps from one start, its losses and then every persistable value."""
import numpy as np


def assert_same_losses(exe, main, program, loss, feeds, interpreted, compiled, rtol):
    """Run each feed through the interpreter (``main`` on ``interpreted``) and the compiled
    ``program`` (on ``compiled``); their losses agree and the weights moved."""
    want = [exe.run(main, feed=f, fetch_list=[loss], scope=interpreted)[0] for f in feeds]
    got = [exe.run(program, feed=f, fetch_list=[loss], scope=compiled)[0] for f in feeds]
    np.testing.assert_allclose(np.ravel(got), np.ravel(want), rtol=rtol)
    assert not np.allclose(want[0], want[-1])  # (a step that did nothing would agree too)


def assert_same_persistables(main, compiled, interpreted, rtol, atol):
    """Every persistable of ``main`` holds the same value in both scopes."""
    for v in main.list_vars():
        if v.persistable and v.name not in ("feed", "fetch"):
            np.testing.assert_allclose(np.asarray(compiled.find_var(v.name).get_tensor()),
                                       np.asarray(interpreted.find_var(v.name).get_tensor()),
                                       rtol=rtol, atol=atol, err_msg=v.name)
