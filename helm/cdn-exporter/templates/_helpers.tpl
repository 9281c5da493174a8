{{/* Chart name, at most 63 characters. */}}
{{- define "cdn-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: release-chart unless the release name already contains the chart name. */}}
{{- define "cdn-exporter.fullname" -}}
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

{{- define "cdn-exporter.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "cdn-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cdn-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "cdn-exporter.labels" -}}
helm.sh/chart: {{ include "cdn-exporter.chart" . }}
{{ include "cdn-exporter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: cdn-exporter
{{- end }}

{{- define "cdn-exporter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "cdn-exporter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "cdn-exporter.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* True (non-empty) when more than one replica shares the accounts: a StatefulSet. */}}
{{- define "cdn-exporter.sharded" -}}
{{- if gt (int .Values.sharding.replicas) 1 }}true{{ end }}
{{- end }}

{{/* The Secret that holds the token: an existing one, the chart's own, or none (empty). */}}
{{- define "cdn-exporter.secretName" -}}
{{- if .Values.existingSecret.name }}
{{- .Values.existingSecret.name }}
{{- else if .Values.token }}
{{- include "cdn-exporter.fullname" . }}
{{- end }}
{{- end }}

{{- define "cdn-exporter.secretKey" -}}
{{- if .Values.existingSecret.name }}{{ .Values.existingSecret.key }}{{ else }}token{{ end }}
{{- end }}

{{/* The Secret that holds the login's password: an existing one, the chart's own, or none (empty). */}}
{{- define "cdn-exporter.loginSecretName" -}}
{{- if .Values.login.existingSecret.name }}
{{- .Values.login.existingSecret.name }}
{{- else if .Values.login.password }}
{{- include "cdn-exporter.fullname" . }}-login
{{- end }}
{{- end }}

{{- define "cdn-exporter.loginSecretKey" -}}
{{- if .Values.login.existingSecret.name }}{{ .Values.login.existingSecret.key }}{{ else }}password{{ end }}
{{- end }}

{{/* Paths inside the container; the config file points at them. */}}
{{- define "cdn-exporter.configPath" -}}/etc/cdn-exporter/config.yml{{- end }}
{{- define "cdn-exporter.tokenDir" -}}/etc/cdn-exporter/secret{{- end }}
{{- define "cdn-exporter.tokenPath" -}}/etc/cdn-exporter/secret/token{{- end }}
{{- define "cdn-exporter.passwordDir" -}}/etc/cdn-exporter/login{{- end }}
{{- define "cdn-exporter.passwordPath" -}}/etc/cdn-exporter/login/password{{- end }}
{{- define "cdn-exporter.stateDir" -}}/var/lib/cdn-exporter{{- end }}
{{- define "cdn-exporter.statePath" -}}/var/lib/cdn-exporter/state.json{{- end }}

{{/*
The exporter's configuration file: .Values.config as written, plus api.token_file when the chart mounts a token
and state_file on the state volume. Fails early on settings the exporter would refuse at start-up.
*/}}
{{- define "cdn-exporter.config" -}}
{{- $config := deepCopy .Values.config }}
{{- $discovery := default (dict) $config.accounts_discovery }}
{{- if and (not $config.accounts) (not $discovery.enabled) }}
{{- fail "config.accounts: list at least one account to poll (name, and optionally dvr_streams, recordings, token_file), or enable config.accounts_discovery" }}
{{- end }}
{{- $api := default (dict) $config.api }}
{{- if and .Values.login.username (include "cdn-exporter.secretName" .) }}
{{- fail "login.username: set either a token (token, existingSecret.name) or a login, not both" }}
{{- end }}
{{- if and .Values.login.username (not (include "cdn-exporter.loginSecretName" .)) }}
{{- fail "login.username: set login.password or login.existingSecret.name" }}
{{- end }}
{{- if include "cdn-exporter.secretName" . }}
{{- $_ := set $api "token_file" (include "cdn-exporter.tokenPath" .) }}
{{- else if .Values.login.username }}
{{- $_ := set $api "username" .Values.login.username }}
{{- $_ := set $api "password_file" (include "cdn-exporter.passwordPath" .) }}
{{- else if and (not $api.token_file) (not $api.password_file) }}
{{- $perAccount := true }}
{{- range $config.accounts }}
{{- if and (not .token_file) (not .password_file) }}{{ $perAccount = false }}{{ end }}
{{- end }}
{{- if not $perAccount }}
{{- fail "no CDN token: set token, existingSecret.name, login.username, config.api.token_file or a token_file on every account" }}
{{- end }}
{{- end }}
{{- $_ := set $config "api" $api }}
{{- $_ := set $config "state_file" (include "cdn-exporter.statePath" .) }}
{{- toYaml $config }}
{{- end }}

{{/* The container's command line after the image's entrypoint (tini). */}}
{{- define "cdn-exporter.args" -}}
- node
- dist/src/cli.js
- run
- --config
- {{ include "cdn-exporter.configPath" . }}
- --web.listen-address
- {{ printf ":%d" (int .Values.port) | quote }}
- --log.level
- {{ .Values.logLevel }}
- --log.format
- {{ .Values.logFormat }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- /* web config (issue 14) */}}
{{- if include "cdn-exporter.webEnabled" . }}
- --web.config.file
- {{ printf "%s/%s" (include "cdn-exporter.webConfigDir" .) .Values.web.existingConfigSecretKey | quote }}
{{- if .Values.web.healthzOpen }}
- --web.healthz-open
{{- end }}
{{- end }}
{{- end }}

{{/* --- web config (--web.config.file: TLS and basic auth), issue 14 ------------------------------------------- */}}

{{/* Non-empty when the exporter gets a web config file (an existing Secret, TLS, or basic-auth users). */}}
{{- define "cdn-exporter.webEnabled" -}}
{{- if or .Values.web.existingConfigSecret .Values.web.tls.enabled .Values.web.basicAuth.users -}}true{{- end -}}
{{- end }}

{{/* The Secret holding web-config.yml: the user's, or the chart's own. */}}
{{- define "cdn-exporter.webSecretName" -}}
{{- default (printf "%s-web" (include "cdn-exporter.fullname" .)) .Values.web.existingConfigSecret -}}
{{- end }}

{{- define "cdn-exporter.webConfigDir" -}}/etc/cdn-exporter/web{{- end }}
{{- define "cdn-exporter.tlsDir" -}}/etc/cdn-exporter/tls{{- end }}

{{/*
The web config file the chart generates (exporter-toolkit format). The certificate comes from a
kubernetes.io/tls Secret (cert-manager writes tls.crt, tls.key and ca.crt), mounted as a directory so a renewed
certificate reaches the pod and the exporter picks it up at the next handshake.
*/}}
{{- define "cdn-exporter.webConfig" -}}
{{- $w := .Values.web -}}
{{- $out := dict -}}
{{- if $w.tls.enabled -}}
{{- $dir := include "cdn-exporter.tlsDir" . -}}
{{- $tls := dict "cert_file" (printf "%s/tls.crt" $dir) "key_file" (printf "%s/tls.key" $dir) "min_version" $w.tls.minVersion -}}
{{- if ne $w.tls.clientAuthType "NoClientCert" -}}
{{- $_ := set $tls "client_auth_type" $w.tls.clientAuthType -}}
{{- end -}}
{{- if $w.tls.clientCA -}}
{{- $_ := set $tls "client_ca_file" (printf "%s/ca.crt" $dir) -}}
{{- end -}}
{{- $_ := set $out "tls_server_config" $tls -}}
{{- end -}}
{{- $http := dict "http2" $w.http2 -}}
{{- with $w.headers -}}
{{- $_ := set $http "headers" . -}}
{{- end -}}
{{- $_ := set $out "http_server_config" $http -}}
{{- with $w.basicAuth.users -}}
{{- $_ := set $out "basic_auth_users" . -}}
{{- end -}}
{{- toYaml $out -}}
{{- end }}

{{/* https when the web config turns TLS on, else http. */}}
{{- define "cdn-exporter.webScheme" -}}
{{- if .Values.web.tls.enabled -}}HTTPS{{- else -}}HTTP{{- end -}}
{{- end }}

{{/*
Non-empty when kubelet cannot probe over HTTP: it presents no client certificate (client_auth_type requires one),
or basic auth is on and /healthz is not left open (kubelet sends no credentials). The probes then only check the
port accepts connections.
*/}}
{{- define "cdn-exporter.webProbeTcp" -}}
{{- if and .Values.web.tls.enabled (has .Values.web.tls.clientAuthType (list "RequireAnyClientCert" "RequireAndVerifyClientCert")) -}}true
{{- else if and (or .Values.web.basicAuth.users .Values.web.existingConfigSecret) (not .Values.web.healthzOpen) -}}true
{{- end -}}
{{- end }}

{{/* Readiness checks /readyz, or /healthz when basic auth guards /readyz (kubelet sends no credentials). */}}
{{- define "cdn-exporter.readinessPath" -}}
{{- if or .Values.web.basicAuth.users .Values.web.existingConfigSecret -}}/healthz{{- else -}}/readyz{{- end -}}
{{- end }}

{{/*
The PromQL matcher of this exporter's scrape job in the exporter alerts (it replaces the rule file's
job=~".*cdn-exporter.*"): prometheusRule.jobSelector when set; else the job the chart's ServiceMonitor gives its
targets: the value of the Service label serviceMonitor.jobLabel, or the Service's name.
*/}}
{{- define "cdn-exporter.jobSelector" -}}
{{- if .Values.prometheusRule.jobSelector }}
{{- .Values.prometheusRule.jobSelector }}
{{- else if .Values.serviceMonitor.jobLabel }}
{{- $serviceLabels := merge (include "cdn-exporter.labels" . | fromYaml) (deepCopy .Values.service.labels) }}
{{- $job := index $serviceLabels .Values.serviceMonitor.jobLabel }}
{{- if not $job }}
{{- fail (printf "serviceMonitor.jobLabel %q is not a label of the Service: add it to service.labels, or set prometheusRule.jobSelector" .Values.serviceMonitor.jobLabel) }}
{{- end }}
{{- printf "job=%q" (toString $job) }}
{{- else }}
{{- printf "job=%q" (include "cdn-exporter.fullname" .) }}
{{- end }}
{{- end }}

{{/* The ServiceMonitor endpoint's tlsConfig as YAML, or empty: serviceMonitor.tlsConfig, else web.serviceMonitor.tlsConfig when web.tls.enabled. */}}
{{- define "cdn-exporter.monitorTlsConfig" -}}
{{- if .Values.serviceMonitor.tlsConfig }}
{{- toYaml .Values.serviceMonitor.tlsConfig }}
{{- else if and .Values.web.tls.enabled .Values.web.serviceMonitor.tlsConfig }}
{{- toYaml .Values.web.serviceMonitor.tlsConfig }}
{{- end }}
{{- end }}

{{/* The ServiceMonitor endpoint's basicAuth as YAML, or empty: serviceMonitor.basicAuth, else web.serviceMonitor.basicAuth. */}}
{{- define "cdn-exporter.monitorBasicAuth" -}}
{{- if .Values.serviceMonitor.basicAuth }}
{{- toYaml .Values.serviceMonitor.basicAuth }}
{{- else if .Values.web.serviceMonitor.basicAuth }}
{{- toYaml .Values.web.serviceMonitor.basicAuth }}
{{- end }}
{{- end }}

{{/*
The Secrets and ConfigMaps that the ServiceMonitor's tlsConfig (ca, cert, keySecret) and basicAuth (username,
password) name, as "Secret a, ConfigMap b", or empty. prometheus-operator reads them from the ServiceMonitor's
namespace, and leaves a ServiceMonitor whose references it cannot read out of Prometheus' configuration.
*/}}
{{- define "cdn-exporter.monitorRefs" -}}
{{- $tls := include "cdn-exporter.monitorTlsConfig" . | fromYaml }}
{{- $auth := include "cdn-exporter.monitorBasicAuth" . | fromYaml }}
{{- $refs := list }}
{{- range $field := list "ca" "cert" }}
{{- with get $tls $field }}
{{- with .secret }}{{ $refs = append $refs (printf "Secret %s" .name) }}{{ end }}
{{- with .configMap }}{{ $refs = append $refs (printf "ConfigMap %s" .name) }}{{ end }}
{{- end }}
{{- end }}
{{- with $tls.keySecret }}{{ $refs = append $refs (printf "Secret %s" .name) }}{{ end }}
{{- range $field := list "username" "password" }}
{{- with get $auth $field }}{{ $refs = append $refs (printf "Secret %s" .name) }}{{ end }}
{{- end }}
{{- $refs | uniq | join ", " }}
{{- end }}

{{/*
For NOTES.txt: a curl of `path` through `kubectl port-forward` (127.0.0.1:port) that the exporter's web config
lets through. Called as (dict "ctx" . "path" "/metrics"). TLS: https and -k (the certificate names the Service,
not 127.0.0.1); a client certificate when web.tls.clientAuthType requires one; basic auth: -u with the first user
of web.basicAuth.users (curl asks for the password), or USER with web.existingConfigSecret (its users are not
known here).
*/}}
{{- define "cdn-exporter.curl" -}}
{{- $v := .ctx.Values -}}
curl -s{{ if $v.web.tls.enabled }}k{{ end }}
{{- if and $v.web.tls.enabled (has $v.web.tls.clientAuthType (list "RequireAnyClientCert" "RequireAndVerifyClientCert")) }} --cert client.crt --key client.key{{ end }}
{{- if $v.web.existingConfigSecret }} -u USER
{{- else if $v.web.basicAuth.users }} -u {{ keys $v.web.basicAuth.users | sortAlpha | first }}
{{- end }} {{ if $v.web.tls.enabled }}https{{ else }}http{{ end }}://127.0.0.1:{{ $v.port }}{{ .path }}
{{- end }}
