{{/* The two webhook configurations (webhooks.yaml in url mode, the ConfigMap otherwise). */}}
{{- define "ww.webhookConfigurations" -}}
{{- $fullname := include "ww.fullname" . -}}
{{- $targets := (include "ww.allTargets" . | fromYaml).targets | default list -}}
{{- /* vap.mode replace: the kinds the generated policies judge entirely are not sent to /validate */ -}}
{{- $validated := list -}}
{{- range $targets }}{{ if not (and $.Values.vap.enabled (eq $.Values.vap.mode "replace") (has (printf "%s.%s" .kind .group) $.Values.vap.replacedKinds)) }}{{ $validated = append $validated . }}{{ end }}{{ end -}}
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: {{ $fullname }}
  labels: {{- include "ww.labels" . | nindent 4 }}
  {{- include "ww.certManagerAnnotation" . | nindent 2 }}
webhooks:
  - name: scheduling.validate.workload-webhook.k8s.io
    clientConfig: {{- include "ww.clientConfig" (dict "root" . "path" "/validate") | nindent 6 }}
    rules:
      - apiGroups: ["scheduling.k8s.io"]
        apiVersions: ["v1beta1", "v1alpha3"]
        resources: ["workloads", "podgroups", "podgroups/status", "compositepodgroups", "compositepodgroups/status"]
        operations: ["CREATE", "UPDATE"]
        scope: Namespaced
    failurePolicy: Fail
    {{- include "ww.common" . | nindent 4 }}
  {{- if $validated }}
  - name: targets.validate.workload-webhook.k8s.io
    clientConfig: {{- include "ww.clientConfig" (dict "root" . "path" "/validate") | nindent 6 }}
    rules: {{- include "ww.targetRules" (dict "targets" $validated "operations" (list "CREATE" "UPDATE")) | nindent 6 }}
    failurePolicy: Fail
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
  {{- if $targets }}
  - name: targets.mutate.workload-webhook.k8s.io
    clientConfig: {{- include "ww.clientConfig" (dict "root" . "path" "/mutate") | nindent 6 }}
    rules: {{- include "ww.targetRules" (dict "targets" $targets "operations" (list "CREATE")) | nindent 6 }}
    failurePolicy: Fail
    reinvocationPolicy: IfNeeded
    {{- include "ww.common" . | nindent 4 }}
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
