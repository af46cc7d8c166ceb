"""The bench's readings at the first config primitive are taken once, before any primitive's time
is recorded, however many of the LCM's threads start their primitives at once."""
import threading
import time

from testbed import convergence


def test_the_readings_are_taken_once_by_the_first_primitive(monkeypatch):
    calls = []

    def slow_reading(_namespaces):
        calls.append(threading.get_ident())
        time.sleep(0.05)            # long enough for every other thread to arrive meanwhile
        return 7

    monkeypatch.setattr(convergence, "own_ticks", slow_reading)
    monkeypatch.setattr(convergence.loadcheck, "machine_ticks", lambda: (11, 0))
    monkeypatch.setattr(convergence.vca.Model, "__init__", lambda self, *a, **k: None)
    monkeypatch.setattr(convergence.vca.Model, "set_config", lambda self, app, values, wait=True: None)
    model = convergence.BenchModel()
    go = threading.Barrier(16)

    def primitive(i):
        go.wait()
        model.set_config("vnf{}".format(i), {})

    threads = [threading.Thread(target=primitive, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert (model.own_at_first_config, model.ticks_at_first_config) == (7, (11, 0))
    assert len(model.config_times) == 16
