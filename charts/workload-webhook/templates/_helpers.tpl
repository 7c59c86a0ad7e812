{{- define "ww.name" -}}
{{- default "workload-webhook" .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Every object's name: fullnameOverride, else the release name when it contains the chart's
     name, else <release>-<name>; at most 63 characters (a release name has up to 53). */}}
{{- define "ww.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "ww.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "ww.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* <fullname><suffix> within Kubernetes' limit for the kind (max: 63, a CronJob's 52): when too
     long, the fullname is cut and a hash of it added, so two releases never share the name. */}}
{{- define "ww.suffixedName" -}}
{{- $full := include "ww.fullname" .root -}}
{{- $max := int (default 63 .max) -}}
{{- if le (len (print $full .suffix)) $max -}}
{{- print $full .suffix -}}
{{- else -}}
{{- $keep := int (sub (sub $max (len .suffix)) 7) -}}
{{- printf "%s-%s%s" ($full | trunc $keep | trimSuffix "-") (sha256sum $full | trunc 6) .suffix -}}
{{- end -}}
{{- end -}}

{{/* The bridge's Lease: the name its config is given and the name its Role may update. */}}
{{- define "ww.bridgeLease" -}}{{ printf "%s-bridge" (include "ww.fullname" .) }}{{- end -}}
{{- define "ww.auditName" -}}{{ include "ww.suffixedName" (dict "root" . "suffix" "-audit" "max" 52) }}{{- end -}}

{{- define "ww.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ww.fullname" .) .Values.serviceAccount.name -}}
{{- else if .Values.serviceAccount.name -}}
{{- .Values.serviceAccount.name -}}
{{- else -}}
{{- fail "serviceAccount.name is required with serviceAccount.create false: the chart binds its RBAC to that ServiceAccount" -}}
{{- end -}}
{{- end -}}

{{/* The chart's labels on every object; commonLabels add to them (never to a selector) and
     cannot replace them. */}}
{{- define "ww.standardLabels" -}}
{{- toYaml (merge (dict "app.kubernetes.io/name" .name "app.kubernetes.io/instance" .root.Release.Name
    "app.kubernetes.io/version" .root.Chart.AppVersion "app.kubernetes.io/managed-by" .root.Release.Service
    "helm.sh/chart" (printf "%s-%s" .root.Chart.Name .root.Chart.Version)) .extra (.root.Values.commonLabels | default dict)) -}}
{{- end -}}

{{- define "ww.labels" -}}
{{ include "ww.standardLabels" (dict "root" . "name" (include "ww.name" .) "extra" dict) }}
{{- end -}}

{{/* The Deployment's selector, immutable since the first release, and the Service's: the audit and
     test Pods carry another app.kubernetes.io/name (ww.componentLabels), so neither ever matches them. */}}
{{- define "ww.selector" -}}
app.kubernetes.io/name: {{ include "ww.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The serving Pods and what selects them besides the Deployment and Service: the
     PodDisruptionBudget, the NetworkPolicy, the spread constraints. */}}
{{- define "ww.servingSelector" -}}
{{ include "ww.selector" . }}
app.kubernetes.io/component: webhook
{{- end -}}

{{- define "ww.servingLabels" -}}
{{ include "ww.standardLabels" (dict "root" . "name" (include "ww.name" .) "extra" (dict "app.kubernetes.io/component" "webhook")) }}
{{- end -}}

{{/* The release's other components (audit, test): their own name, so no selector of the serving
     Pods matches them; part-of ties them to the release's application. */}}
{{- define "ww.componentLabels" -}}
{{- $name := include "ww.name" .root -}}
{{ include "ww.standardLabels" (dict "root" .root "name" (printf "%s-%s" $name .component | trunc 63 | trimSuffix "-")
    "extra" (dict "app.kubernetes.io/part-of" $name "app.kubernetes.io/component" .component)) }}
{{- end -}}

{{/* What selects one of those components (the helm test Pod, for the NetworkPolicy): from its labels. */}}
{{- define "ww.componentSelector" -}}
{{- pick (include "ww.componentLabels" . | fromYaml) "app.kubernetes.io/instance" "app.kubernetes.io/component" | toYaml -}}
{{- end -}}

{{/* registry/repository:tag[@digest] (image.registry, else a parent chart's global.imageRegistry). */}}
{{- define "ww.image" -}}
{{- $i := .Values.image -}}
{{- $registry := $i.registry | default (.Values.global | default dict).imageRegistry -}}
{{- $ref := printf "%s:%s" $i.repository (default .Chart.AppVersion $i.tag) -}}
{{- with $registry }}{{ $ref = printf "%s/%s" (trimSuffix "/" .) $ref }}{{ end -}}
{{- with $i.digest }}{{ $ref = printf "%s@%s" $ref . }}{{ end -}}
{{- $ref -}}
{{- end -}}

{{/* The ports the serving container listens on: server.port and server.metricsPort, or with
     hostNetwork the node ports of its own (the Service's targetPorts are the names, so they follow). */}}
{{- define "ww.port" -}}
{{- if .Values.hostNetwork }}{{ int .Values.hostNetworkPorts.admission }}{{ else }}{{ int .Values.server.port }}{{ end -}}
{{- end -}}
{{- define "ww.metricsPort" -}}
{{- if .Values.hostNetwork }}{{ int .Values.hostNetworkPorts.metrics }}{{ else }}{{ int .Values.server.metricsPort }}{{ end -}}
{{- end -}}

{{- define "ww.tlsSecret" -}}
{{- if eq .Values.certificates.mode "provided" -}}{{ .Values.certificates.provided.secretName }}{{- else -}}{{ include "ww.suffixedName" (dict "root" . "suffix" "-tls") }}{{- end -}}
{{- end -}}

{{- define "ww.caConfigMap" -}}{{ include "ww.suffixedName" (dict "root" . "suffix" "-ca") }}{{- end -}}

{{/* The config file: the user's config plus what the chart decides (server, certificates). */}}
{{- define "ww.config" -}}
{{- if eq (int .Values.server.metricsPort) (int .Values.server.port) -}}
{{- fail (printf "server.metricsPort (%d) must differ from server.port: the metrics have a port of their own" (int .Values.server.metricsPort)) -}}
{{- end -}}
{{- if lt (int64 .Values.server.bodyBudgetBytes) (int64 .Values.server.maxBodyBytes) -}}
{{- fail "server.bodyBudgetBytes must be at least server.maxBodyBytes: a body claims up to maxBodyBytes of it" -}}
{{- end -}}
{{- $c := deepCopy .Values.config -}}
{{- /* server: every key of .Values.server as it is (values.schema.json's server section is written
     from the settings' fields, webhook/server_settings.py: a new setting needs no edit here), whole
     numbers as integers (YAML numbers reach templates as floats), and what the chart decides. */ -}}
{{- $server := dict -}}
{{- range $key, $value := .Values.server -}}
{{- if and (kindIs "float64" $value) (eq $value (float64 (int64 $value))) -}}
{{- $_ := set $server $key (int64 $value) -}}
{{- else -}}
{{- $_ := set $server $key $value -}}
{{- end -}}
{{- end -}}
{{- $_ := set $c "server" (merge (dict "bindAddress" "0.0.0.0" "certDir" "/var/run/workload-webhook/certs" "cluster" "auto") $server) -}}
{{- if .Values.hostNetwork -}}
{{- /* on the node's network: the ports of its own (ww.port), which must differ */ -}}
{{- if eq (int .Values.hostNetworkPorts.admission) (int .Values.hostNetworkPorts.metrics) -}}
{{- fail (printf "hostNetworkPorts.metrics (%d) must differ from hostNetworkPorts.admission" (int .Values.hostNetworkPorts.metrics)) -}}
{{- end -}}
{{- $_ := set $c.server "port" (int .Values.hostNetworkPorts.admission) -}}
{{- $_ := set $c.server "metricsPort" (int .Values.hostNetworkPorts.metrics) -}}
{{- end -}}
{{- if .Values.events.enabled -}}
{{- $_ := set $c "events" (merge (dict "enabled" true) ($c.events | default dict)) -}}
{{- end -}}
{{- if eq .Values.certificates.mode "self" -}}
{{- $s := .Values.certificates.self -}}
{{- $_ := set $c "certificates" (dict "mode" "secret" "secret" (printf "%s/%s" .Release.Namespace (include "ww.tlsSecret" .)) "webhookConfiguration" (include "ww.fullname" .) "caConfigMap" (include "ww.caConfigMap" .) "dnsNames" (include "ww.dnsNames" . | fromYamlArray) "caValiditySeconds" (int $s.caValiditySeconds) "leafValiditySeconds" (int $s.leafValiditySeconds) "graceSeconds" (int $s.graceSeconds) "checkIntervalSeconds" (int $s.checkIntervalSeconds)) -}}
{{- else -}}
{{- $_ := set $c "certificates" (dict "mode" "files") -}}
{{- end -}}
{{- if include "ww.leader" . -}}
{{- /* the Lease the chart's Role names, in the release namespace (the bridge's, which the gang model shares) */ -}}
{{- $b := deepCopy ($c.bridge | default dict) -}}
{{- $_ := set $b "lease" (merge (dict "name" (include "ww.bridgeLease" .) "namespace" .Release.Namespace) ($b.lease | default dict)) -}}
{{- $_ := set $c "bridge" $b -}}
{{- end -}}
{{- toYaml $c -}}
{{- end -}}

{{- define "ww.dnsNames" -}}
{{- $svc := include "ww.fullname" . -}}
- {{ $svc }}
- {{ $svc }}.{{ .Release.Namespace }}
- {{ $svc }}.{{ .Release.Namespace }}.svc
- {{ $svc }}.{{ .Release.Namespace }}.svc.cluster.local
- localhost
{{- with .Values.webhook.url }}
{{- $host := (urlParse .).hostname }}
{{- if and $host (not (regexMatch "^[0-9.:]+$" $host)) }}
- {{ $host }}
{{- end }}
{{- end }}
{{- end -}}

{{/* caBundle: only in provided mode. In self mode the service patches it and
     the chart never renders it, so upgrades and rollbacks leave it alone;
     in certManager mode cert-manager's cainjector fills it. */}}
{{- define "ww.caBundle" -}}
{{- if eq .Values.certificates.mode "provided" -}}
{{- .Values.certificates.provided.caBundle | b64enc -}}
{{- end -}}
{{- end -}}

{{- define "ww.clientConfig" -}}
{{- $bundle := include "ww.caBundle" .root -}}
{{- if $bundle }}
caBundle: {{ $bundle }}
{{- end }}
{{- if .root.Values.webhook.url }}
url: {{ printf "%s%s" (trimSuffix "/" .root.Values.webhook.url) .path }}
{{- else }}
service:
  name: {{ include "ww.fullname" .root }}
  namespace: {{ .root.Release.Namespace }}
  path: {{ .path }}
  port: 443
{{- end }}
{{- end -}}

{{- define "ww.common" -}}
sideEffects: None
admissionReviewVersions: ["v1"]
timeoutSeconds: {{ .Values.webhook.timeoutSeconds }}
matchPolicy: Equivalent
{{ include "ww.selectors" . }}
{{- end -}}

{{/* What every webhook and the Pod membership policy leave alone: kube-system and the release namespace
     always (the registration policy requires those two), webhook.extraExcludedNamespaces, and what
     webhook.namespaceSelector and objectSelector exempt: its matchExpressions are ANDed with that
     exclusion, its matchLabels kept. */}}
{{- define "ww.selectors" -}}
{{- $ns := .Values.webhook.namespaceSelector | default dict -}}
namespaceSelector:
  {{- with $ns.matchLabels }}
  matchLabels: {{- toYaml . | nindent 4 }}
  {{- end }}
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values: {{ concat (list "kube-system" .Release.Namespace) .Values.webhook.extraExcludedNamespaces | uniq | sortAlpha | toJson }}
    {{- with $ns.matchExpressions }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- with .Values.webhook.objectSelector }}
objectSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "ww.podMatchExpression" -}}
{{- $label := default "scheduling.k8s.io/pod-group" .Values.config.pods.groupLabel -}}
{{- $terms := list (printf "(has(object.metadata.labels) && '%s' in object.metadata.labels)" $label) "has(object.spec.schedulingGroup)" -}}
{{- /* the bridge's Pods (webhook/foreign/admission.py pod_match_terms) */ -}}
{{- $bridge := .Values.config.bridge | default dict -}}
{{- if $bridge.coscheduling }}{{ $terms = append $terms "(has(object.metadata.labels) && 'scheduling.x-k8s.io/pod-group' in object.metadata.labels)" }}{{ end -}}
{{- if $bridge.volcano }}{{ $terms = append $terms "(has(object.metadata.annotations) && 'scheduling.k8s.io/group-name' in object.metadata.annotations)" }}{{ end -}}
{{- with $bridge.schedulerNames }}
{{- $names := list }}{{ range . }}{{ $names = append $names (printf "'%s'" .) }}{{ end }}
{{- $terms = append $terms (printf "(has(object.spec.schedulerName) && object.spec.schedulerName in [%s])" (join ", " $names)) }}
{{- end -}}
{{- join " || " $terms -}}
{{- end -}}

{{- define "ww.podMatch" -}}
matchConditions:
  - name: names-a-pod-group
    expression: {{ include "ww.podMatchExpression" . | quote }}
{{- end -}}

{{/* The bridge is on: a dialect is. */}}
{{- define "ww.bridge" -}}
{{- $bridge := .Values.config.bridge | default dict -}}
{{- if or $bridge.coscheduling $bridge.volcano }}true{{ end -}}
{{- end -}}

{{/* The live gang model (config.gangs.model, docs/operations.md#the-live-gang-model). */}}
{{- define "ww.gangModel" -}}
{{- $gangs := .Values.config.gangs | default dict -}}
{{- if $gangs.model }}true{{ end -}}
{{- end -}}

{{/* What holds the bridge's Lease in the bridge's process: the bridge, the gang model or both. */}}
{{- define "ww.leader" -}}
{{- if or (include "ww.bridge" .) (include "ww.gangModel" .) }}true{{ end -}}
{{- end -}}

{{/* The targets webhook rules cover: config.targets plus those of config.profiles
     (the resources each shipped profile judges; webhook/profiles/*.yaml). */}}
{{- define "ww.allTargets" -}}
{{- /* Each with `mutates`: whether /mutate can change its objects (DEF-1: a composite, or a group
     that defaults minCount; webhook/targets.py Target.mutates). The profiles default nothing. */ -}}
{{- $out := list -}}
{{- range (.Values.config.targets | default list) }}
{{- $mutates := not (empty .composite) -}}
{{- range (.groups | default list) }}{{ if and (ne (toString .defaultMinCount) "false") (ne (toString .minCount) "unset") }}{{ $mutates = true }}{{ end }}{{ end -}}
{{- $out = append $out (merge (dict "mutates" $mutates) (pick . "group" "kind" "versions" "plural")) -}}
{{- end -}}
{{- range (.Values.config.profiles | default list) }}
{{- if eq (toString .) "jobset" }}{{ $out = append $out (dict "group" "jobset.x-k8s.io" "kind" "JobSet" "versions" (list "v1alpha2") "plural" "jobsets" "mutates" false) }}
{{- else if eq (toString .) "leaderworkerset" }}{{ $out = append $out (dict "group" "leaderworkerset.x-k8s.io" "kind" "LeaderWorkerSet" "versions" (list "v1") "plural" "leaderworkersets" "mutates" false) }}
{{- else if kindIs "map" . }}{{ $out = append $out (merge (dict "mutates" false) (pick . "group" "kind" "versions" "plural")) }}
{{- else }}{{ fail (printf "config.profiles: unknown profile %v (jobset, leaderworkerset or a job-template map)" .) }}
{{- end }}
{{- end -}}
{{- toYaml (dict "targets" $out) -}}
{{- end -}}

{{- /* A target's resource: its `plural`, else the lowercase kind + "s" where no pluralisation
     could say otherwise (the rule of webhook/targets.py obvious_plural, docs/configuration.md#plural);
     otherwise the chart refuses to render: a rule naming a resource that does not exist would
     match nothing, and the cluster would enforce nothing for the kind (nor could the audit list it). */ -}}
{{- define "ww.targetResource" -}}
{{- $resource := .plural -}}
{{- if not $resource }}
{{- $word := regexFind "[A-Z]?[a-z]+$" .kind | lower -}}
{{- $doubt := not $word -}}
{{- range (list "s" "x" "z" "ch" "sh" "y" "o" "f" "fe" "um" "i" "person" "people" "child" "man" "men" "foot" "feet" "tooth" "teeth" "goose" "geese" "mouse" "mice" "louse" "ox" "die" "data" "media" "criteria" "criterion" "phenomena" "phenomenon" "sheep" "deer" "moose" "bison" "salmon" "trout" "swine" "cattle" "offspring" "craft" "ware" "information" "equipment" "feedback" "traffic" "music" "evidence" "knowledge" "research" "advice" "police") }}{{ if hasSuffix . $word }}{{ $doubt = true }}{{ end }}{{ end -}}
{{- if $doubt }}{{ fail (printf "config.targets: %s.%s: give `plural`: the resource name of kind %s cannot be told from the kind (docs/configuration.md#plural)" .kind .group .kind) }}{{ end -}}
{{- $resource = printf "%ss" (lower .kind) -}}
{{- end -}}
{{- $resource -}}
{{- end -}}

{{- define "ww.targetRules" -}}
{{- range .targets }}
- apiGroups: [{{ .group | quote }}]
  apiVersions: {{ default (list "*") .versions | toJson }}
  resources: [{{ include "ww.targetResource" . | quote }}]
  operations: {{ $.operations | toJson }}
  scope: "*"
{{- end }}
{{- end -}}

{{- define "ww.certManagerAnnotation" -}}
{{- if eq .Values.certificates.mode "certManager" }}
annotations:
  cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "ww.suffixedName" (dict "root" . "suffix" "-serving")) }}
{{- end }}
{{- end -}}
