"""What the targets did with the cases of one test run: compared or declined (and why).

``TALLY`` is filled by tests/targets/test_targets_agree.py; its final test checks the
decline counts against the committed baseline (declines.json), and conftest.py prints
:meth:`Tally.table` in the terminal summary.
"""
import collections
import json
import pathlib

BASELINE = pathlib.Path(__file__).with_name("declines.json")


class Tally:
    def __init__(self):
        self.ran = set()  # the test ids that reached their target
        self.compared = collections.defaultdict(set)  # target -> {(op, case id)}
        self.declined = collections.defaultdict(list)  # target -> [(case id, reason)]
        self.declined_ops = collections.defaultdict(set)
        self.notes = []  # lines for the terminal summary

    def compare(self, target, case):
        self.compared[target].add((case.op, case.id))

    def decline(self, target, case, reason):
        self.declined[target].append((case.id, reason))
        self.declined_ops[target].add(case.op)

    def counts(self):
        return {target: len(rows) for target, rows in self.declined.items()}

    def table(self):
        """Per target: the (op, target) pairs and cases compared, and the cases declined."""
        targets = sorted(set(self.compared) | set(self.declined))
        lines = [f"{'target':<12} {'ops compared':>12} {'cases compared':>14} "
                 f"{'declined':>8}"]
        for target in targets:
            pairs = self.compared[target]
            lines.append(f"{target:<12} {len({op for op, _ in pairs}):>12} {len(pairs):>14} "
                         f"{len(self.declined[target]):>8}")
        return lines

    def check_baseline(self):
        """The lines of a target whose declines rose above the baseline (with every
        decline of it); a note asks to lower the baseline where they fell."""
        baseline = json.loads(BASELINE.read_text())
        counts = self.counts()
        risen = []
        for target in sorted(set(baseline) | set(counts)):
            now, before = counts.get(target, 0), baseline.get(target, 0)
            if now > before:
                risen.append(f"{target}: {now} declined cases, the baseline allows {before}:")
                risen += [f"  {case_id}: {reason}" for case_id, reason in
                          sorted(self.declined[target])]
            elif now < before:
                self.notes.append(f"{target} declines {now} cases, {before - now} fewer than "
                                  f"the baseline: lower it to {now} in "
                                  f"tests/targets/{BASELINE.name}")
        return risen


TALLY = Tally()
