/* The `ports` option in the create body (docs/protocols/docker.md §8):
 * each entry { port, protocol, host_ip, host_port } becomes
 * ExposedPorts["<port>/<protocol>"] = {} and a PortBindings entry
 * { HostIp, HostPort } under the same key; HostPort "" lets the engine
 * choose a free port (Docker at start, Podman at create). The option was
 * checked and normalised by the descriptor (provider.lua). */
#include <stdio.h>

#include "docker_config.h"

int sk_dk_ports_apply(json_t *body, json_t *host, const json_t *ports)
{
    if (json_array_size(ports) == 0)
        return 0;
    json_t *exposed = json_object(), *bindings = json_object();
    if (!exposed || !bindings)
        goto oom;
    size_t i;
    json_t *p;
    json_array_foreach(ports, i, p) {
        char key[40], host_port[24] = "";
        const char *proto = json_string_value(json_object_get(p, "protocol"));
        const char *ip = json_string_value(json_object_get(p, "host_ip"));
        json_int_t hp = json_integer_value(json_object_get(p, "host_port"));
        snprintf(key, sizeof key, "%" JSON_INTEGER_FORMAT "/%.8s", json_integer_value(json_object_get(p, "port")),
                 proto ? proto : "tcp");
        if (hp > 0)
            snprintf(host_port, sizeof host_port, "%" JSON_INTEGER_FORMAT, hp);
        json_t *list = json_object_get(bindings, key);
        if (!list) {
            list = json_array();
            if (!list || json_object_set_new(bindings, key, list) != 0 ||
                json_object_set_new(exposed, key, json_object()) != 0)
                goto oom;
        }
        if (json_array_append_new(list, json_pack("{s:s,s:s}", "HostIp", ip ? ip : "127.0.0.1", "HostPort",
                                                  host_port)) != 0)
            goto oom;
    }
    if (json_object_set_new(body, "ExposedPorts", exposed) != 0) {
        exposed = NULL;
        goto oom;
    }
    exposed = NULL;
    if (json_object_set_new(host, "PortBindings", bindings) != 0)
        return -1;
    return 0;
oom:
    json_decref(exposed);
    json_decref(bindings);
    return -1;
}
