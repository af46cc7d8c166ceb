"""`make oai-conformance`: the OAI charms checked against OAI's own sources at the pinned refs.

The project contains no OAI code or templates: they are read from OAI_SRC (git checkouts or bare
mirrors, laid out by ``layout.py``). See ``__main__`` for what is checked.
"""
