{{/*
The policy keys taskgate cannot change while it runs (src/reload/policy-diff.ts,
RESTART_ONLY_KEYS; test/packaging/helm-reload.test.ts keeps the two lists equal), with their
values, as JSON. Its checksum is the pods' checksum/policy-restart annotation: a policy change
that touches none of these reaches the running pods through the ConfigMap volume and is
reloaded in place, without a restart; one that touches them rolls the pods.
*/}}
{{- define "taskgate.restartOnlyPolicy" -}}
{{- $policy := fromYaml (include "taskgate.policyText" .) | default dict -}}
{{- $fixed := dict -}}
{{- range $key := list "listen.host" "listen.port" "listen.trustProxy" "admin.host" "admin.port" "limits.maxBodyBytes" "limits.maxHeaderBytes" "limits.headersTimeout" "limits.keepAliveTimeout" "limits.maxConnections" "tasks.maxRecords" "store" "audit" "logging.buffered" "logging.flushInterval" -}}
{{- $parts := splitList "." $key -}}
{{- if eq (len $parts) 1 -}}
{{- $_ := set $fixed $key (get $policy $key) -}}
{{- else -}}
{{- $_ := set $fixed $key (get (get $policy (first $parts) | default dict) (last $parts)) -}}
{{- end -}}
{{- end -}}
{{- toJson $fixed -}}
{{- end -}}
