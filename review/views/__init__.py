"""Views: pages (`pages`), autosave/recording endpoints (`actions`), staff pages (`staff`)."""
