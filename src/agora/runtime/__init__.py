"""Actors on Trio: one task per entity, a registry that spawns and evicts them, one clock."""
