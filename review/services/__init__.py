"""Writes for blind review: `<entity>_<action>(*, …)`, keyword-only, short transactions."""
