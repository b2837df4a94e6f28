"""The project's own sample data: a tiny repository with a real bug and twelve attempts at it.

Build with `python -m grading.sample.build`; see build.py.
"""
