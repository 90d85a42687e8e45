"""Drive Lanyard's /api/v4 with Debian's unmodified python-gitlab (3.12) and print what it saw.

Run by test/clients/python-gitlab.test.ts against a real HTTP server. Environment: LANYARD_URL,
LANYARD_PAT (alice, scope api), LANYARD_OAUTH (alice, scope api). Prints one JSON document; the
test asserts every value. Any exception fails the run (non-zero exit, traceback on stderr).
"""
import json
import os
import sys
import warnings

import gitlab

warnings.simplefilter("error")  # a client warning (e.g. a mismatched pagination URL) is a failure

url = os.environ["LANYARD_URL"]


def wire(obj):
    """The attributes the server sent (python-gitlab adds its parent's id, e.g. group_id)."""
    return {k: v for k, v in obj.attributes.items() if k not in ("group_id", "project_id")}

out = {"python_gitlab": gitlab.__version__}

# gl.auth() with a personal access token and with an OAuth token.
pat = gitlab.Gitlab(url, private_token=os.environ["LANYARD_PAT"])
pat.auth()
out["auth_pat"] = {"username": pat.user.username, "id": pat.user.id, "theme_id": pat.user.theme_id}
oauth = gitlab.Gitlab(url, oauth_token=os.environ["LANYARD_OAUTH"])
oauth.auth()
out["auth_oauth"] = {"username": oauth.user.username}

# gl.version()
out["version"] = list(pat.version())

# Global notification settings: read, modify, save, read again.
settings = pat.notificationsettings.get()
out["global_before"] = settings.attributes
settings.level = "custom"
settings.new_release = True
settings.moved_project = True
settings.save()
out["global_after"] = oauth.notificationsettings.get().attributes

# A group and a project fetched for real (not lazy), then their settings.
group = pat.groups.get("acme/team")
out["group"] = {"id": group.id, "full_path": group.full_path, "full_name": group.full_name}
gs = group.notificationsettings.get()
out["group_before"] = wire(gs)
gs.level = "custom"
gs.fixed_pipeline = True
gs.save()
out["group_after"] = wire(pat.groups.get(group.id).notificationsettings.get())

project = oauth.projects.get("acme/team/api")
out["project"] = {
    "id": project.id,
    "path_with_namespace": project.path_with_namespace,
    "name_with_namespace": project.name_with_namespace,
    "namespace": project.namespace,
}
ps = project.notificationsettings.get()
ps.level = "watch"
ps.save()
out["project_after"] = wire(pat.projects.get(project.id).notificationsettings.get())

# Pagination: get_all follows the Link headers; the iterator reads X-Total and friends.
out["groups_all"] = [g.full_path for g in pat.groups.list(get_all=True, per_page=2)]
it = pat.groups.list(iterator=True, per_page=2)
out["groups_iterator"] = {
    "total": it.total,
    "total_pages": it.total_pages,
    "per_page": it.per_page,
    "paths": [g.full_path for g in it],
}
out["groups_page2"] = [g.full_path for g in pat.groups.list(page=2, per_page=2)]
out["projects_all"] = [p.path_with_namespace for p in oauth.projects.list(get_all=True, per_page=1)]

# Errors reach the caller as python-gitlab's exceptions with GitLab's status and message.
try:
    pat.groups.get("hidden")
    out["hidden"] = "visible?!"
except gitlab.exceptions.GitlabGetError as e:
    out["hidden"] = {"status": e.response_code, "message": e.error_message}

json.dump(out, sys.stdout)
