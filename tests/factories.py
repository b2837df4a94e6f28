"""factory_boy factories for the models tests build directly."""

from __future__ import annotations

import factory
from django.contrib.auth.models import User


class UserFactory(factory.django.DjangoModelFactory[User]):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw-for-tests-only")


class StaffFactory(UserFactory):
    is_staff = True
