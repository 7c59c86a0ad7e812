{{/* The two webhook configurations (webhooks.yaml in url mode, the ConfigMap otherwise). */}}
{{- define "ww.webhookConfigurations" -}}
{{- $fullname := include "ww.fullname" . -}}
{{- $targets := (include "ww.allTargets" . | fromYaml).targets | default list -}}
{{- /* vap.mode replace: the kinds the generated policies judge entirely are not sent to /validate */ -}}
{{- $validated := list -}}
{{- range $targets }}{{ if not (and $.Values.vap.enabled (eq $.Values.vap.mode "replace") (has (printf "%s.%s" .kind .group) $.Values.vap.replacedKinds)) }}{{ $validated = append $validated . }}{{ end }}{{ end -}}
{{- /* /mutate only gets the targets it can change (DEF-1): a down webhook never refuses the rest */ -}}
{{- $mutated := list -}}
{{- range $targets }}{{ if .mutates }}{{ $mutated = append $mutated . }}{{ end }}{{ end -}}
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: {{ $fullname }}
  labels: {{- include "ww.labels" . | nindent 4 }}
  {{- include "ww.certManagerAnnotation" . | nindent 2 }}
webhooks:
  - name: scheduling.validate.workload-webhook.k8s.io
    clientConfig: {{- include "ww.clientConfig" (dict "root" . "path" "/validate") | nindent 6 }}
    # Objects only: status writes (kube-scheduler's conditions, the ResourceClaim controller's
    # claim statuses) are validated by kube-apiserver and never wait for this webhook.
    rules:
      - apiGroups: ["scheduling.k8s.io"]
        apiVersions: ["v1beta1", "v1alpha3"]
        resources: ["workloads", "podgroups", "compositepodgroups"]
        operations: ["CREATE", "UPDATE"]
        scope: Namespaced
    failurePolicy: {{ .Values.webhook.failurePolicy }}
    {{- include "ww.common" . | nindent 4 }}
  {{- if $validated }}
  - name: targets.validate.workload-webhook.k8s.io
    clientConfig: {{- include "ww.clientConfig" (dict "root" . "path" "/validate") | nindent 6 }}
    rules: {{- include "ww.targetRules" (dict "targets" $validated "operations" (list "CREATE" "UPDATE")) | nindent 6 }}
    failurePolicy: {{ .Values.webhook.failurePolicy }}
    {{- include "ww.common" . | nindent 4 }}
  {{- end }}
  {{- if include "ww.bridge" . }}
  {{- $bridge := .Values.config.bridge }}
  - name: bridge.validate.workload-webhook.k8s.io
    clientConfig: {{- include "ww.clientConfig" (dict "root" . "path" "/validate") | nindent 6 }}
    rules:
      {{- if $bridge.coscheduling }}
      - {apiGroups: ["scheduling.x-k8s.io"], apiVersions: ["v1alpha1"], resources: ["podgroups"], operations: ["CREATE"], scope: Namespaced}
      {{- end }}
      {{- if $bridge.volcano }}
      - {apiGroups: ["scheduling.volcano.sh"], apiVersions: ["v1beta1"], resources: ["podgroups"], operations: ["CREATE"], scope: Namespaced}
      {{- end }}
    failurePolicy: Ignore         # the warnings of BRG-1 only: a job's controller never waits on them
    {{- include "ww.common" . | nindent 4 }}
  {{- end }}
  {{- if eq (default "policy" .Values.config.pods.validation) "webhook" }}
  - name: pods.validate.workload-webhook.k8s.io
    clientConfig: {{- include "ww.clientConfig" (dict "root" . "path" "/validate") | nindent 6 }}
    rules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        resources: ["pods"]
        operations: ["CREATE"]
        scope: Namespaced
    failurePolicy: {{ .Values.webhook.podFailurePolicy }}
    {{- include "ww.common" . | nindent 4 }}
    {{- include "ww.podMatch" . | nindent 4 }}
  {{- end }}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: {{ $fullname }}
  labels: {{- include "ww.labels" . | nindent 4 }}
  {{- include "ww.certManagerAnnotation" . | nindent 2 }}
webhooks:
  {{- if $mutated }}
  - name: targets.mutate.workload-webhook.k8s.io
    clientConfig: {{- include "ww.clientConfig" (dict "root" . "path" "/mutate") | nindent 6 }}
    rules: {{- include "ww.targetRules" (dict "targets" $mutated "operations" (list "CREATE")) | nindent 6 }}
    failurePolicy: Fail
    reinvocationPolicy: IfNeeded
    {{- include "ww.common" . | nindent 4 }}
  {{- end }}
  {{- /* gang by default (DEF-2, webhook/registration.py gang_webhooks): the selected namespaces only */ -}}
  {{- $gang := .Values.config.gangByDefault | default dict }}
  {{- if $gang.enabled }}
  {{- if ne (toString $gang.jobs) "false" }}
  - name: jobs.gang.mutate.workload-webhook.k8s.io
    clientConfig: {{- include "ww.clientConfig" (dict "root" . "path" "/mutate") | nindent 6 }}
    rules:
      - apiGroups: ["batch"]
        apiVersions: ["v1"]
        resources: ["jobs"]
        operations: ["CREATE"]
        scope: Namespaced
    failurePolicy: {{ .Values.webhook.failurePolicy }}
    reinvocationPolicy: IfNeeded
    {{- include "ww.gangCommon" . | nindent 4 }}
    matchConditions:
      - {name: no-scheduling, expression: "!has(object.spec.scheduling)"}
      - {name: several-pods, expression: "has(object.spec.parallelism) && object.spec.parallelism > 1 && (!has(object.spec.completions) || object.spec.completions > 1)"}
      - {name: no-controller-owner, expression: "!has(object.metadata.ownerReferences) || !object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller)"}
      - {name: no-pod-group, expression: "!has(object.spec.template.spec.schedulingGroup)"}
  {{- end }}
  {{- $ganged := list -}}
  {{- range $targets }}{{ if and (not .mutates) (has (printf "%s.%s" .kind .group) ($gang.targets | default list)) }}{{ $ganged = append $ganged . }}{{ end }}{{ end -}}
  {{- if $ganged }}
  - name: targets.gang.mutate.workload-webhook.k8s.io
    clientConfig: {{- include "ww.clientConfig" (dict "root" . "path" "/mutate") | nindent 6 }}
    rules: {{- include "ww.targetRules" (dict "targets" $ganged "operations" (list "CREATE")) | nindent 6 }}
    failurePolicy: {{ .Values.webhook.failurePolicy }}
    reinvocationPolicy: IfNeeded
    {{- include "ww.gangCommon" . | nindent 4 }}
  {{- end }}
  {{- end }}
  - name: pods.mutate.workload-webhook.k8s.io
    clientConfig: {{- include "ww.clientConfig" (dict "root" . "path" "/mutate") | nindent 6 }}
    rules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        resources: ["pods"]
        operations: ["CREATE"]
        scope: Namespaced
    failurePolicy: {{ .Values.webhook.podFailurePolicy }}
    reinvocationPolicy: IfNeeded
    {{- include "ww.common" . | nindent 4 }}
    {{- include "ww.podMatch" . | nindent 4 }}
{{- end -}}


{{/* ww.common with config.gangByDefault.namespaceSelector ANDed to the chart's selectors (DEF-2). */}}
{{- define "ww.gangCommon" -}}
{{- $ns := .Values.webhook.namespaceSelector | default dict -}}
{{- $gang := (.Values.config.gangByDefault | default dict).namespaceSelector | default dict -}}
{{- $labels := merge (deepCopy ($gang.matchLabels | default dict)) ($ns.matchLabels | default dict) -}}
sideEffects: None
admissionReviewVersions: ["v1"]
timeoutSeconds: {{ .Values.webhook.timeoutSeconds }}
matchPolicy: Equivalent
namespaceSelector:
  {{- with $labels }}
  matchLabels: {{- toYaml . | nindent 4 }}
  {{- end }}
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values: {{ concat (list "kube-system" .Release.Namespace) .Values.webhook.extraExcludedNamespaces | uniq | sortAlpha | toJson }}
    {{- with concat ($ns.matchExpressions | default list) ($gang.matchExpressions | default list) }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- with .Values.webhook.objectSelector }}
objectSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
