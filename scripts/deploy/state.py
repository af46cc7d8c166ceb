"""What this tool created (build/deploy/state.json), so that undeploy removes exactly that.

Resources that existed before (MicroStack's own `test` network, an image the operator uploaded,
a VIM account registered by hand) are never recorded and therefore never deleted. A dry run
creates nothing and so records nothing.
"""

import json
import os
import time

STATE_FILE = os.path.join("build", "deploy", "state.json")


class State:
    def __init__(self, root, dry_run):
        self.path = os.path.join(root, STATE_FILE)
        self.dry_run = dry_run
        self.data = {"created": {}, "instances": {}}
        if os.path.exists(self.path):
            with open(self.path) as f:
                self.data = json.load(f)
            self.data.setdefault("created", {})
            self.data.setdefault("instances", {})

    def created(self, scope, kind):
        return list(self.data["created"].get(scope, {}).get(kind, []))

    def record(self, scope, kind, value):
        if self.dry_run:
            return
        items = self.data["created"].setdefault(scope, {}).setdefault(kind, [])
        if value not in items:
            items.append(value)
        self.save()

    def forget(self, scope, kind, value):
        items = self.data["created"].get(scope, {}).get(kind, [])
        if value in items:
            items.remove(value)
            self.save()

    def instance(self, variant):
        return self.data["instances"].get(variant)

    def set_instance(self, variant, **fields):
        if self.dry_run:
            return
        entry = self.data["instances"].setdefault(variant, {})
        entry.update(fields)
        entry["updated"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.save()

    def drop_instance(self, variant):
        if self.data["instances"].pop(variant, None) is not None:
            self.save()

    def save(self):
        if self.dry_run:
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f, indent=2, sort_keys=True)
        os.replace(tmp, self.path)
