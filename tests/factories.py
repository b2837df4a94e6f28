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


class ServiceAccountFactory(factory.django.DjangoModelFactory[User]):
    """A pipeline's account: no password, in the service group; may hold API tokens."""

    class Meta:
        model = User
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"service{n}")

    @factory.post_generation
    def service(obj: User, create: bool, extracted: object, **kwargs: object) -> None:  # type: ignore[misc]
        from grading.services.tokens import service_account_create

        obj.set_unusable_password()
        if create:
            obj.save(update_fields=["password"])
            service_account_create(username=obj.username)
