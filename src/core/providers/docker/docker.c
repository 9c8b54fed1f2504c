/* DockerSandbox: one long-lived container per sandbox through the Docker
 * Engine API, faithful to upstream's @mastra/docker 0.3.0
 * (docs/protocols/docker.md). Lifecycle steps are API calls one at a time:
 *   start   = list by label -> inspect -> start it if stopped (reconnect,
 *             never recreate), or image inspect -> pull -> create -> start
 *   stop    = (list by label) -> stop, 10 s grace
 *   destroy = (list by label) -> remove, force, with volumes
 * Commands: docker_exec.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../http.h"
#include "docker_state.h"

enum {
    DK_STOP_GRACE_S = 10,             /* upstream: container.stop({ t: 10 }) */
    DK_PULL_TIMEOUT_MS = 10 * 60000,  /* an image pull, whole */
};

typedef enum { OP_START, OP_STOP, OP_DESTROY } op_kind;

typedef enum {
    STEP_LIST,
    STEP_INSPECT,
    STEP_START_EXISTING,
    STEP_IMAGE,
    STEP_PULL,
    STEP_CREATE,
    STEP_START,
    STEP_STOP,
    STEP_REMOVE,
} op_step;

struct dk_op {
    sk_sandbox *sb;
    dk_sandbox *ds;
    op_kind kind;
    op_step step;
    sk_provider_done done;
    dk_call *call;
    char *method, *path; /* of the call in flight, for errors */
};

static void op_free(dk_op *op)
{
    sk_dk_api_cancel(op->call);
    free(op->method);
    free(op->path);
    free(op);
}

static void op_end(dk_op *op, sk_error *err)
{
    sk_sandbox *sb = op->sb;
    sk_provider_done done = op->done;
    op->call = NULL; /* finished (its callback is running) or never started */
    op->ds->op = NULL;
    op_free(op);
    done(sb, err);
}

static void op_on_reply(const dk_reply *r, const sk_error *err, void *ud);

/* Sends a call; path is consumed. */
static void op_call(dk_op *op, op_step step, const char *method, char *path, const json_t *body, unsigned flags,
                    long timeout_ms)
{
    op->step = step;
    free(op->method);
    free(op->path);
    op->method = strdup(method);
    op->path = path;
    op->call = NULL;
    if (!op->method || !op->path) {
        op_end(op, sk_error_oom());
        return;
    }
    sk_error *err = NULL;
    op->call = sk_dk_api_call(&op->ds->api, method, path, body, flags, timeout_ms, op_on_reply, op, &err);
    if (!op->call)
        op_end(op, err);
}

static char *dk_path(const char *fmt, const char *a)
{
    char *esc = sk_url_escape(a, NULL), *out = NULL;
    if (esc && asprintf(&out, fmt, esc) < 0)
        out = NULL;
    free(esc);
    return out;
}

static void op_list(dk_op *op)
{
    /* upstream's _findExistingContainer: all containers labelled with the id */
    json_t *filters = json_pack("{s:[s+]}", "label", "mastra.sandbox.id=", op->ds->cfg.id);
    char *f = filters ? json_dumps(filters, JSON_COMPACT) : NULL;
    json_decref(filters);
    char *path = f ? dk_path("/containers/json?all=1&filters=%s", f) : NULL;
    free(f);
    op_call(op, STEP_LIST, "GET", path, NULL, 0, 0);
}

static void op_container_call(dk_op *op, op_step step, const char *method, const char *fmt, long timeout_ms)
{
    op_call(op, step, method, dk_path(fmt, op->ds->container_id), NULL, 0, timeout_ms);
}

/* upstream: container.stop({ t: 10 }); the call waits out the grace */
static void op_stop(dk_op *op)
{
    op_container_call(op, STEP_STOP, "POST", "/containers/%s/stop?t=10",
                      (long)DK_STOP_GRACE_S * 1000 + op->ds->cfg.api_timeout_ms);
}

static int op_remember_id(dk_op *op, const char *id)
{
    char *copy = strdup(id);
    if (!copy)
        return -1;
    free(op->ds->container_id);
    op->ds->container_id = copy;
    return 0;
}

/* Image names keep '/', ':' and '@' (the API routes /images/{name}/json
 * with slashes); anything else is escaped. */
static char *dk_image_path(const char *image)
{
    char *esc = sk_url_escape(image, "/:@"), *out = NULL;
    if (esc && asprintf(&out, "/images/%s/json", esc) < 0)
        out = NULL;
    free(esc);
    return out;
}

static void op_pull(dk_op *op)
{
    char *repo = NULL, *tag = NULL, *path = NULL;
    if (sk_dk_split_image(op->ds->cfg.image, &repo, &tag) == 0) {
        char *r = sk_url_escape(repo, NULL), *t = sk_url_escape(tag, NULL);
        if (r && t && asprintf(&path, "/images/create?fromImage=%s&tag=%s", r, t) < 0)
            path = NULL;
        free(r);
        free(t);
    }
    free(repo);
    free(tag);
    op_call(op, STEP_PULL, "POST", path, NULL, DK_CALL_JSON_LINES, DK_PULL_TIMEOUT_MS);
}

static void op_create(dk_op *op)
{
    json_t *body = sk_dk_create_body(&op->ds->cfg, op->sb->env);
    if (!body) {
        op_end(op, sk_error_oom());
        return;
    }
    op_call(op, STEP_CREATE, "POST", dk_path("/containers/create?name=%s", op->ds->cfg.container_name), body, 0, 0);
    json_decref(body); /* the call keeps its own (wiped) text */
}

static sk_error *op_api_error(dk_op *op, const dk_reply *r, const char *what)
{
    char *vpath = sk_dk_api_versioned(&op->ds->api, op->path);
    sk_error *e = sk_dk_api_error(&op->ds->api, op->method, vpath ? vpath : op->path, r, what);
    free(vpath);
    sk_error_set(e, "sandbox_id", json_string(op->ds->cfg.id));
    if (op->ds->container_id)
        sk_error_set(e, "container_id", json_string(op->ds->container_id));
    return e;
}

static bool dk_message_has(const dk_reply *r, const char *needle)
{
    return strcasestr(sk_dk_reply_message(r), needle) != NULL;
}

static void dk_remember_inspect(dk_sandbox *ds, const json_t *doc)
{
    json_t *m = json_object();
    if (!m)
        return;
    const char *id = json_string_value(json_object_get(doc, "Id"));
    const char *name = json_string_value(json_object_get(doc, "Name"));
    const char *state = json_string_value(json_object_get(json_object_get(doc, "State"), "Status"));
    const char *created = json_string_value(json_object_get(doc, "Created"));
    if (id)
        json_object_set_new(m, "container_id", json_string(id));
    if (name)
        json_object_set_new(m, "container_name", json_string(name));
    if (state)
        json_object_set_new(m, "state", json_string(state));
    if (created)
        json_object_set_new(m, "created", json_string(created));
    json_decref(ds->inspected);
    ds->inspected = m;
    /* upstream's info().createdAt: the container's creation time */
    struct tm tm = { 0 };
    const char *rest = created ? strptime(created, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (rest) {
        double ms = (double)timegm(&tm) * 1000.0;
        if (*rest == '.')
            ms += strtod(rest, NULL) * 1000.0;
        ds->sb->created_at_ms = (double)(long long)ms;
    }
}

static void op_on_reply(const dk_reply *r, const sk_error *err, void *ud)
{
    dk_op *op = ud;
    dk_sandbox *ds = op->ds;
    op->call = NULL;
    if (err) {
        sk_error *e = sk_error_copy(err);
        sk_error_set(e, "sandbox_id", json_string(ds->cfg.id));
        op_end(op, e);
        return;
    }
    switch (op->step) {
    case STEP_LIST: {
        if (r->status != 200 || !json_is_array(r->json)) {
            op_end(op, op_api_error(op, r, "Listing Docker containers"));
            return;
        }
        const char *id = json_string_value(json_object_get(json_array_get(r->json, 0), "Id"));
        if (!id) {
            if (op->kind == OP_START)
                op_call(op, STEP_IMAGE, "GET", dk_image_path(ds->cfg.image), NULL, 0, 0);
            else
                op_end(op, NULL); /* nothing of this sandbox exists */
            return;
        }
        if (op_remember_id(op, id) != 0) {
            op_end(op, sk_error_oom());
            return;
        }
        if (op->kind == OP_START)
            op_container_call(op, STEP_INSPECT, "GET", "/containers/%s/json", 0);
        else if (op->kind == OP_STOP)
            op_stop(op);
        else
            op_container_call(op, STEP_REMOVE, "DELETE", "/containers/%s?force=1&v=1", 0);
        return;
    }
    case STEP_INSPECT:
        if (r->status != 200 || !json_is_object(r->json)) {
            op_end(op, op_api_error(op, r, "Inspecting the Docker container"));
            return;
        }
        dk_remember_inspect(ds, r->json);
        if (json_is_true(json_object_get(json_object_get(r->json, "State"), "Running"))) {
            op_end(op, NULL); /* reconnected */
            return;
        }
        op_container_call(op, STEP_START_EXISTING, "POST", "/containers/%s/start", 0);
        return;
    case STEP_IMAGE:
        if (r->status == 200) {
            op_create(op);
        } else if (r->status != 404) {
            op_end(op, op_api_error(op, r, "Inspecting the Docker image"));
        } else if (ds->cfg.pull == DK_PULL_NEVER) {
            sk_error *e = op_api_error(op, r, "Inspecting the Docker image");
            sk_error *e2 = sk_error_new(SK_ERR_DOCKER_API, e ? json_incref(e->fields) : NULL,
                                        "Docker image '%s' is not present locally and the pull option is \"never\"",
                                        ds->cfg.image);
            sk_error_set(e2, "image", json_string(ds->cfg.image));
            sk_error_set(e2, "reason", json_string("image_not_found"));
            sk_error_free(e);
            op_end(op, e2);
        } else {
            op_pull(op);
        }
        return;
    case STEP_PULL:
        if (r->status != 200 || r->stream_error) {
            /* upstream's message; Podman (and Docker, for some failures)
             * report it in a 200 stream */
            const char *why = r->stream_error ? r->stream_error : sk_dk_reply_message(r);
            sk_error *e = op_api_error(op, r, "Pulling the Docker image");
            sk_error *e2 = sk_error_new(SK_ERR_DOCKER_API, e ? json_incref(e->fields) : NULL,
                                        "Failed to pull Docker image '%s': %.4096s", ds->cfg.image, why);
            sk_error_set(e2, "image", json_string(ds->cfg.image));
            sk_error_set(e2, "reason", json_string("image_pull_failed"));
            sk_error_set(e2, "docker_message", json_string(why));
            sk_error_free(e);
            op_end(op, e2);
            return;
        }
        op_create(op);
        return;
    case STEP_CREATE: {
        const char *id = json_string_value(json_object_get(r->json, "Id"));
        if (r->status != 201 || !id) {
            op_end(op, op_api_error(op, r, "Creating the Docker container"));
            return;
        }
        if (op_remember_id(op, id) != 0) {
            op_end(op, sk_error_oom());
            return;
        }
        op_container_call(op, STEP_START, "POST", "/containers/%s/start", 0);
        return;
    }
    case STEP_START:
    case STEP_START_EXISTING:
        if (r->status != 204 && r->status != 304) {
            op_end(op, op_api_error(op, r, "Starting the Docker container"));
            return;
        }
        op_end(op, NULL);
        return;
    case STEP_STOP:
        /* upstream tolerates "is not running" / "container already stopped" */
        if (r->status != 204 && r->status != 304 && !dk_message_has(r, "is not running") &&
            !dk_message_has(r, "container already stopped")) {
            op_end(op, op_api_error(op, r, "Stopping the Docker container"));
            return;
        }
        op_end(op, NULL);
        return;
    case STEP_REMOVE:
        /* and a container already gone, or being removed */
        if (r->status != 204 && r->status != 404 && !dk_message_has(r, "no such container") &&
            !(dk_message_has(r, "removal") && dk_message_has(r, "already in progress"))) {
            op_end(op, op_api_error(op, r, "Removing the Docker container"));
            return;
        }
        free(ds->container_id);
        ds->container_id = NULL;
        op_end(op, NULL);
        return;
    }
}

static void dk_begin(sk_sandbox *sb, op_kind kind, sk_provider_done done)
{
    dk_sandbox *ds = sb->impl;
    dk_op *op = calloc(1, sizeof *op);
    if (!op) {
        done(sb, sk_error_oom());
        return;
    }
    op->sb = sb;
    op->ds = ds;
    op->kind = kind;
    op->done = done;
    ds->op = op;
    /* start always looks by label (upstream); stop and destroy use the
     * container they know, else look it up */
    if (kind == OP_START || !ds->container_id)
        op_list(op);
    else if (kind == OP_STOP)
        op_stop(op);
    else
        op_container_call(op, STEP_REMOVE, "DELETE", "/containers/%s?force=1&v=1", 0);
}

static void dk_start(sk_sandbox *sb, sk_provider_done done) { dk_begin(sb, OP_START, done); }
static void dk_stop(sk_sandbox *sb, sk_provider_done done) { dk_begin(sb, OP_STOP, done); }
static void dk_destroy(sk_sandbox *sb, sk_provider_done done) { dk_begin(sb, OP_DESTROY, done); }

/* ---- info ------------------------------------------------------------------------ */

static void refresh_on_reply(const dk_reply *r, const sk_error *err, void *ud)
{
    sk_sandbox *sb = ud;
    dk_sandbox *ds = sb->impl;
    ds->refresh = NULL;
    sk_provider_done done = ds->refresh_done;
    /* upstream's getInfo ignores a failed inspect: metadata stays as configured */
    if (!err && r->status == 200 && json_is_object(r->json))
        dk_remember_inspect(ds, r->json);
    done(sb, NULL);
}

static void dk_refresh(sk_sandbox *sb, sk_provider_done done)
{
    dk_sandbox *ds = sb->impl;
    char *path = ds->container_id ? dk_path("/containers/%s/json", ds->container_id) : NULL;
    sk_error *err = NULL;
    ds->refresh_done = done;
    if (path)
        ds->refresh = sk_dk_api_call(&ds->api, "GET", path, NULL, 0, 0, refresh_on_reply, sb, &err);
    free(path);
    if (!ds->refresh) {
        sk_error_free(err);
        done(sb, NULL);
    }
}

static json_t *dk_metadata(sk_sandbox *sb)
{
    dk_sandbox *ds = sb->impl;
    json_t *m = sk_dk_config_metadata(&ds->cfg);
    if (m && ds->inspected) {
        json_t *v;
        if ((v = json_object_get(ds->inspected, "container_id")))
            json_object_set(m, "container_id", v);
        if ((v = json_object_get(ds->inspected, "container_name")))
            json_object_set(m, "container_name", v);
        if ((v = json_object_get(ds->inspected, "state")))
            json_object_set(m, "state", v);
    } else if (m && ds->container_id) {
        json_object_set_new(m, "container_id", json_string(ds->container_id));
    }
    if (m)
        json_object_set_new(m, "docker_host", json_string(ds->api.host));
    return m;
}

static char *dk_instructions(sk_sandbox *sb)
{
    dk_sandbox *ds = sb->impl;
    return sk_dk_config_instructions(&ds->cfg);
}

static void dk_free(sk_sandbox *sb)
{
    dk_sandbox *ds = sb->impl;
    if (!ds)
        return;
    if (ds->op)
        op_free(ds->op); /* no callback: the sandbox layer settles its waiters */
    sk_dk_api_cancel(ds->refresh);
    sk_dk_kills_free(ds);
    sk_dk_api_free(&ds->api);
    sk_dk_config_free(&ds->cfg);
    free(ds->container_id);
    json_decref(ds->inspected);
    free(ds);
    sb->impl = NULL;
}

static int dk_init(sk_sandbox *sb, const json_t *options, sk_error **err)
{
    dk_sandbox *ds = calloc(1, sizeof *ds);
    if (!ds) {
        *err = sk_error_oom();
        return -1;
    }
    sb->impl = ds;
    ds->sb = sb;
    /* the id is needed now (labels, container name): upstream's form */
    if (!sb->id && !(sb->id = sk_sandbox_default_id("docker"))) {
        *err = sk_error_oom();
        return -1;
    }
    /* `name` names the container; the sandbox's name stays DockerSandbox */
    free(sb->name);
    sb->name = NULL;
    if (sk_dk_config_parse(&ds->cfg, sb->id, options, err) != 0)
        return -1;
    return sk_dk_api_init(&ds->api, sb->loop, sb, ds->cfg.docker_host, ds->cfg.api_timeout_ms, err);
}

const sk_provider sk_provider_docker = {
    .id = "docker",
    .name = "DockerSandbox",
    /* from the command's start, as upstream (docker_exec.c) */
    .handles_timeout = true,
    /* upstream's stop() and destroy() find the container by label even on
     * an instance that never started (_resolveContainer) */
    .stop_when_idle = true,
    .destroy_when_idle = true,
    .init = dk_init,
    .start = dk_start,
    .stop = dk_stop,
    .destroy = dk_destroy,
    .spawn = sk_dk_spawn,
    .kill = sk_dk_kill,
    .write_stdin = sk_dk_write_stdin,
    .close_stdin = sk_dk_close_stdin,
    .release = sk_dk_release,
    .refresh = dk_refresh,
    .metadata = dk_metadata,
    .instructions = dk_instructions,
    .free = dk_free,
    .fs = &sk_dk_fs_ops,       /* its files on the archive endpoints (docker_fs.c, fs.lua) */
    .calls = &sk_dk_calls, /* its methods' Engine API calls (docker_methods.c) */
};
