import threading

import pytest
from django.db import connection

from grading.models import GroupAdvantages
from grading.services.advantages import group_advantages_refresh
from tests.training.builders import config, grade, import_groups, step_group

TIERS = {"p1": (1, 1), "p2": (3, 1), "p3": (3, 1), "p4": (2, 1)}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_refreshes_of_the_same_groups_write_one_row_each():
    cfg = config()
    groups = import_groups(*(step_group(f"t-{i}") for i in range(20)))
    for g in groups:
        grade(g, cfg, TIERS)
    ids = [g.pk for g in groups]
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def refresh() -> None:
        try:
            barrier.wait()
            group_advantages_refresh(group_ids=ids, config=cfg)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=refresh) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert GroupAdvantages.objects.count() == 20
    assert not GroupAdvantages.objects.filter(fallback=True).exists()
