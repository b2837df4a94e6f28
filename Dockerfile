# One image for every GAGAR Review service: web (gunicorn), Celery workers, beat, migrate.
# Build: docker build -t gagar-review .   Run: see compose.yaml and docs/deployment.md.
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    # The source tree in /app is the code that runs (templates/ and static/ sit next to the
    # packages, found through BASE_DIR), so it goes first on the path.
    PYTHONPATH=/app \
    GAGAR_VAR_DIR=/var/lib/gagar \
    STATIC_ROOT=/app/static-root

# git: the grader clones task repositories into its workspace.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# Dependencies first, from pyproject.toml alone, so a code change does not reinstall them.
COPY pyproject.toml README.md ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

COPY manage.py ./
COPY gagar_site ./gagar_site
COPY grading ./grading
COPY review ./review
COPY templates ./templates
COPY static ./static
COPY deploy ./deploy
# The project itself, without re-resolving dependencies (installed above).
RUN pip install --no-deps .

# Static files are collected once, at build time; WhiteNoise serves them from STATIC_ROOT.
# The key below only lets settings load for collectstatic; it is never used to sign anything.
RUN SECRET_KEY=collectstatic-only-not-a-secret DEBUG=0 python manage.py collectstatic --noinput

RUN useradd --system --uid 10001 --home-dir /var/lib/gagar --create-home gagar \
    && mkdir -p /var/lib/gagar /var/lib/gagar-workspaces \
    && chown gagar:gagar /var/lib/gagar /var/lib/gagar-workspaces
USER gagar

EXPOSE 8000
ENTRYPOINT ["/app/deploy/entrypoint.sh"]
CMD ["gunicorn", "--config", "deploy/gunicorn.conf.py", "gagar_site.wsgi"]
