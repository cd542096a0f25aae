"""Keeping a clone compact over months: its packs consolidated and its loose objects packed,
by git gc run when they pile up (housekeeping.py)."""
