"""A long list of objects judged on several cores (webhook.forks): part k
takes every n-th object from the k-th, so the costly kinds spread evenly
however a stream orders them; a child sends back its Results without their
documents (the parent holds those) and the list is put back in file order.
The same Results as one process gives: every part judges against the same
view of all the objects, built before the fork.

Only worth it for many objects: a fork and sending the verdicts back cost
less than judging MIN_PER_PART objects. Measured (bench/validate_bench.py):
a 5 MB `helm template` stream of 11,440 objects is judged in 0.29 s in one
part, 0.22-0.25 s in two (both processes fault on the pages they share); the
50 MB streams gain 1.3-3 s."""
from __future__ import annotations

import pickle
from typing import Callable

from webhook import forks
from webhook.manifests import Document
from webhook.validate.output.model import Result

MIN_PER_PART = 2_000


def parts_for(count: int) -> int:
    return forks.parts(count, MIN_PER_PART)


def _without_documents(results: list[Result]) -> bytes:
    return pickle.dumps([(r.state, r.verdict, r.reason, r.fails, r.hint, r.warns) for r in results],
                        protocol=pickle.HIGHEST_PROTOCOL)


def judge_all(docs: list[Document], judge: Callable[[Document], Result]) -> list[Result]:
    """[judge(doc) for doc in docs], on as many cores as pay."""
    parts = parts_for(len(docs))
    if parts == 1:
        return [judge(doc) for doc in docs]

    def part(k: int) -> list[Result]:
        return [judge(doc) for doc in docs[k::parts]]

    # Part 0 comes back as Results; the others as the tuples a child sent (or, for a child
    # that failed, as the Results judged here again).
    done = forks.run_parts(part, parts, _without_documents, pickle.loads)
    out: list[Result | None] = [None] * len(docs)
    for k, results in enumerate(done):
        for i, r in zip(range(k, len(docs), parts), results):
            out[i] = r if isinstance(r, Result) else Result(docs[i], *r)
    return out
