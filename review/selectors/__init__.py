"""Reads of the review side: what a reviewer reaches (`reviewing`) and adjudication."""
