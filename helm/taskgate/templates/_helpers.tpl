{{/*
Helpers of the taskgate chart: names, labels, the image, the ports read from the policy,
the checks that refuse a broken release, and the taskgate container shared by both modes.
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "taskgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The resource name prefix: fullnameOverride, or the release name (+ the chart name). */}}
{{- define "taskgate.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The policy ConfigMap's name (the sidecar snippet and the example pod refer to it). */}}
{{- define "taskgate.policyConfigMapName" -}}
{{- printf "%s-policy" (include "taskgate.fullname" .) }}
{{- end }}

{{/* Labels every resource carries. */}}
{{- define "taskgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "taskgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: taskgate
{{- end }}

{{/* Labels that select this release's pods. */}}
{{- define "taskgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "taskgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The ServiceAccount of the Deployment's pods. */}}
{{- define "taskgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "taskgate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image reference: repository@digest, or repository:tag (default appVersion). */}}
{{- define "taskgate.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag | toString) }}
{{- end }}
{{- end }}

{{/*
The effective policy as YAML (use with fromYaml): policyYaml when set, else policy.
*/}}
{{- define "taskgate.policyMap" -}}
{{- if .Values.policyYaml }}
{{- $parsed := fromYaml .Values.policyYaml }}
{{- if hasKey $parsed "Error" }}
{{- fail (printf "taskgate: policyYaml is not valid YAML: %v" (get $parsed "Error")) }}
{{- end }}
{{- toYaml $parsed }}
{{- else }}
{{- include "taskgate.valuesPolicy" . }}
{{- end }}
{{- end }}

{{/*
The policy of values.policy as YAML, with what the console values add to it when
console.enabled: console.enabled true, and one console.tokens[] entry per console.tokens item,
its token the env var TASKGATE_CONSOLE_TOKEN_<index> (set from the item's Secret by the
container's env). policyYaml is used as written: there the console section is the user's own.
*/}}
{{- define "taskgate.valuesPolicy" -}}
{{- $policy := deepCopy (.Values.policy | default dict) }}
{{- if .Values.console.enabled }}
{{- $console := deepCopy (get $policy "console" | default dict) }}
{{- $tokens := get $console "tokens" | default list }}
{{- range $index, $token := .Values.console.tokens }}
{{- $tokens = append $tokens (dict "name" $token.name "role" $token.role "token" (printf "${TASKGATE_CONSOLE_TOKEN_%d}" $index)) }}
{{- end }}
{{- $_ := set $console "enabled" true }}
{{- $_ := set $console "tokens" $tokens }}
{{- $_ := set $policy "console" $console }}
{{- end }}
{{- toYaml $policy }}
{{- end }}

{{/* listen.port of the policy (taskgate's default 8080): the container port tg-proxy. */}}
{{- define "taskgate.proxyPort" -}}
{{- $policy := fromYaml (include "taskgate.policyMap" .) }}
{{- int (dig "listen" "port" 8080 $policy) }}
{{- end }}

{{/* admin.port of the policy (taskgate's default 9090): the container port tg-admin. */}}
{{- define "taskgate.adminPort" -}}
{{- $policy := fromYaml (include "taskgate.policyMap" .) }}
{{- int (dig "admin" "port" 9090 $policy) }}
{{- end }}

{{/* store.type of the policy (taskgate's default memory). */}}
{{- define "taskgate.storeType" -}}
{{- $policy := fromYaml (include "taskgate.policyMap" .) }}
{{- dig "store" "type" "memory" $policy }}
{{- end }}

{{/*
Refuses to render a release that cannot work. Included by the policy ConfigMap, which every
mode renders, so that every `helm template` / `helm install` runs these checks.
*/}}
{{- define "taskgate.validate" -}}
{{- $policy := fromYaml (include "taskgate.policyMap" .) }}
{{- if not (has .Values.mode (list "ingress" "sidecar")) }}
{{- fail (printf "taskgate: mode must be \"ingress\" or \"sidecar\", not %q" (toString .Values.mode)) }}
{{- end }}
{{- if eq (include "taskgate.storeType" .) "memory" }}
{{- if and (eq .Values.mode "ingress") (gt (int .Values.replicaCount) 1) (not .Values.autoscaling.enabled) }}
{{- fail (printf "taskgate: replicaCount is %d but policy.store.type is memory. The memory store holds tasks, poll state and limits inside one process: behind several replicas a task created on one is \"not found\" on the others and every limit counts per replica. Set replicaCount: 1, or use policy.store.type: redis (docs/deploy-ingress.md, \"Scaling on Redis\")." (int .Values.replicaCount)) }}
{{- end }}
{{- if and (eq .Values.mode "ingress") .Values.autoscaling.enabled (gt (int .Values.autoscaling.maxReplicas) 1) }}
{{- fail (printf "taskgate: autoscaling.maxReplicas is %d but policy.store.type is memory. The memory store holds tasks, poll state and limits inside one process, so the gateway cannot scale past one replica on it. Disable autoscaling, or use policy.store.type: redis (docs/deploy-ingress.md, \"Scaling on Redis\")." (int .Values.autoscaling.maxReplicas)) }}
{{- end }}
{{- end }}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) }}
{{- fail "taskgate: autoscaling.minReplicas is larger than autoscaling.maxReplicas" }}
{{- end }}
{{- $adminHost := dig "admin" "host" "127.0.0.1" $policy | toString }}
{{- if not (has $adminHost (list "0.0.0.0" "::" "[::]")) }}
{{- fail (printf "taskgate: policy.admin.host is %q (taskgate's default is 127.0.0.1): in a pod the kubelet's probes and Prometheus cannot reach a loopback admin listener. Set policy.admin.host: 0.0.0.0." $adminHost) }}
{{- end }}
{{- $listenHost := dig "listen" "host" "0.0.0.0" $policy | toString }}
{{- if not (has $listenHost (list "0.0.0.0" "::" "[::]")) }}
{{- fail (printf "taskgate: policy.listen.host is %q: clients outside the pod cannot reach it. Set policy.listen.host: 0.0.0.0." $listenHost) }}
{{- end }}
{{- if or (eq (include "taskgate.proxyPort" .) "0") (eq (include "taskgate.adminPort" .) "0") }}
{{- fail "taskgate: policy.listen.port and policy.admin.port must be fixed ports in a pod (0 picks a random port that no probe or Service can know)" }}
{{- end }}
{{- range .Values.secretEnv }}
{{- if not (and .name .secretName .key) }}
{{- fail (printf "taskgate: every secretEnv entry needs name, secretName and key; got %s" (toJson .)) }}
{{- end }}
{{- end }}
{{- range .Values.console.tokens }}
{{- if not (and .name .role .secretName .key) }}
{{- fail (printf "taskgate: every console.tokens entry needs name, role, secretName and key; got %s" (toJson .)) }}
{{- end }}
{{- if not (has .role (list "viewer" "operator")) }}
{{- fail (printf "taskgate: console.tokens role %q: expected viewer or operator" .role) }}
{{- end }}
{{- end }}
{{- if and .Values.console.enabled (not .Values.policyYaml) (empty .Values.console.tokens) (not (dig "console" "jwt" "" $policy)) }}
{{- fail "taskgate: console.enabled needs operator credentials: console.tokens (from Secrets), or policy.console.jwt (operator JWTs); docs/console.md" }}
{{- end }}
{{- if and (eq .Values.mode "sidecar") .Values.metrics.podMonitor.enabled (empty .Values.metrics.podMonitor.podSelector) }}
{{- fail "taskgate: metrics.podMonitor.enabled needs metrics.podMonitor.podSelector, the labels of the MCP server pods" }}
{{- end }}
{{- end }}

{{/*
The policy file's text: policyYaml verbatim, or policy through toYaml. toYaml writes a string
that is exactly one "${NAME}" without quotes, and taskgate reads such an unquoted reference as
a number or boolean when the variable holds one (a digits-only password would stop being a
string), so those values are quoted again: from values, "${NAME}" always yields a string.
*/}}
{{- define "taskgate.policyText" -}}
{{- if .Values.policyYaml }}
{{- .Values.policyYaml }}
{{- else }}
{{- $text := include "taskgate.valuesPolicy" . }}
{{- regexReplaceAll "(?m)(^|: |- )(\\$\\{[A-Za-z_][A-Za-z0-9_]*\\})$" $text "${1}\"${2}\"" }}
{{- end }}
{{- end }}

{{/* The pod's volumes: the policy (read-only) and a writable /tmp. */}}
{{- define "taskgate.volumes" -}}
- name: taskgate-policy
  configMap:
    name: {{ include "taskgate.policyConfigMapName" . }}
    items:
      - key: taskgate.yaml
        path: taskgate.yaml
- name: taskgate-tmp
  emptyDir:
    sizeLimit: 64Mi
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The taskgate container, the same in both modes: the Deployment's only container (ingress)
or the snippet to add to an MCP server's pod (sidecar). Argument: the root context.
*/}}
{{- define "taskgate.container" -}}
name: {{ if eq .Values.mode "sidecar" }}{{ .Values.sidecar.containerName }}{{ else }}taskgate{{ end }}
image: {{ include "taskgate.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
args:
  - --config
  - /etc/taskgate/taskgate.yaml
ports:
  - name: tg-proxy
    containerPort: {{ include "taskgate.proxyPort" . }}
    protocol: TCP
  - name: tg-admin
    containerPort: {{ include "taskgate.adminPort" . }}
    protocol: TCP
{{- if or .Values.env .Values.secretEnv (and .Values.console.enabled .Values.console.tokens) }}
env:
  {{- range .Values.env }}
  - name: {{ .name }}
    value: {{ .value | toString | quote }}
  {{- end }}
  {{- range .Values.secretEnv }}
  - name: {{ .name }}
    valueFrom:
      secretKeyRef:
        name: {{ .secretName }}
        key: {{ .key }}
        {{- if hasKey . "optional" }}
        optional: {{ .optional }}
        {{- end }}
  {{- end }}
  {{- if .Values.console.enabled }}
  {{- range $index, $token := .Values.console.tokens }}
  # The operator console's token of {{ $token.name }} ({{ $token.role }}): console.tokens[{{ $index }}] of the policy.
  - name: TASKGATE_CONSOLE_TOKEN_{{ $index }}
    valueFrom:
      secretKeyRef:
        name: {{ $token.secretName }}
        key: {{ $token.key }}
  {{- end }}
  {{- end }}
{{- end }}
{{- with .Values.envFrom }}
envFrom:
  {{- toYaml . | nindent 2 }}
{{- end }}
startupProbe:
  httpGet:
    path: /healthz
    port: tg-admin
  {{- toYaml .Values.probes.startup | nindent 2 }}
livenessProbe:
  httpGet:
    path: /healthz
    port: tg-admin
  {{- toYaml .Values.probes.liveness | nindent 2 }}
readinessProbe:
  httpGet:
    path: /readyz
    port: tg-admin
  {{- toYaml .Values.probes.readiness | nindent 2 }}
{{- if gt (int .Values.preStopSleepSeconds) 0 }}
lifecycle:
  preStop:
    exec:
      command: ["sleep", "{{ int .Values.preStopSleepSeconds }}"]
{{- end }}
resources:
  {{- toYaml .Values.resources | nindent 2 }}
securityContext:
  {{- toYaml .Values.containerSecurityContext | nindent 2 }}
volumeMounts:
  - name: taskgate-policy
    mountPath: /etc/taskgate
    readOnly: true
  - name: taskgate-tmp
    mountPath: /tmp
  {{- with .Values.extraVolumeMounts }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
