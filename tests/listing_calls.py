"""The relation listings (`relation-list`, `relation-ids`) a charm run makes under ops' Harness,
counted at the backend's edge, where the real charm calls its hook tools."""


class ListingCalls(object):
    """``lists``: the relation ids ``relation-list`` was asked for; ``ids``: the endpoints
    ``relation-ids`` was asked for; ``undo()`` puts the backend back."""

    def __init__(self, harness):
        self.lists, self.ids = [], []
        backend = harness._backend
        listed, ids = backend.relation_list, backend.relation_ids

        def relation_list(relation_id):
            self.lists.append(relation_id)
            return listed(relation_id)

        def relation_ids(name):
            self.ids.append(name)
            return ids(name)
        backend.relation_list, backend.relation_ids = relation_list, relation_ids
        self.undo = lambda: (setattr(backend, "relation_list", listed), setattr(backend, "relation_ids", ids))
