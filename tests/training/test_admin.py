import pytest

from grading.services.advantages import group_advantages_refresh
from tests.factories import StaffFactory
from tests.training.builders import config, grade, import_groups, step_group

pytestmark = pytest.mark.django_db
CAPPED = {"p1": (1, 1), "p2": (3, 1), "p3": (3, 1), "p4": (3, 1)}


@pytest.fixture
def staff_client(client):
    user = StaffFactory.create(is_superuser=True)
    client.force_login(user)
    return client


def test_admins_read_the_lambda_cap_report_and_a_groups_advantages(staff_client):
    cfg = config()
    groups = import_groups(step_group("t-1"), step_group("t-2", step=1))
    grade(groups[0], cfg, CAPPED)
    group_advantages_refresh(group_ids=[g.pk for g in groups], config=cfg)
    page = staff_client.get("/admin/grading/groupadvantages/lambda-cap/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "run-1" in text and "100%" in text
    listing = staff_client.get("/admin/grading/groupadvantages/")
    assert listing.status_code == 200 and "λ-cap report" in listing.content.decode()
    ga = groups[0].advantages.get()
    detail = staff_client.get(f"/admin/grading/groupadvantages/{ga.pk}/change/")
    assert detail.status_code == 200 and "adv_gagar" in detail.content.decode()


def test_the_admin_index_names_every_model_in_proper_english(staff_client):
    # Django's default plural appends "s": "Patchs" would be the admin's first impression.
    text = staff_client.get("/admin/").content.decode()
    assert ">Patches<" in text
    assert "Patchs" not in text
