{{/* Names, labels and the values shared by several templates. */}}

{{- define "proxy-injector.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every object name. Linkerd's own injector objects are all named linkerd-..., so a prefix of ours that
starts with linkerd- is refused: applying such an object could overwrite one of Linkerd's.
*/}}
{{- define "proxy-injector.fullname" -}}
{{- $name := "" }}
{{- if .Values.fullnameOverride }}
{{- $name = .Values.fullnameOverride }}
{{- else if contains (include "proxy-injector.name" .) .Release.Name }}
{{- $name = .Release.Name }}
{{- else }}
{{- $name = printf "%s-%s" .Release.Name (include "proxy-injector.name" .) }}
{{- end }}
{{- $name = $name | trunc 50 | trimSuffix "-" }}
{{- if hasPrefix "linkerd-" $name }}
{{- fail (printf "object names would start with %q, which Linkerd's own objects use; choose another release name or set fullnameOverride" $name) }}
{{- end }}
{{- $name }}
{{- end }}

{{/* Cluster-scoped objects carry the namespace too, so that installs in two namespaces do not collide. */}}
{{- define "proxy-injector.clusterName" -}}
{{- printf "%s-%s" (include "proxy-injector.fullname" .) .Release.Namespace | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "proxy-injector.selectorLabels" -}}
app.kubernetes.io/name: {{ include "proxy-injector.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "proxy-injector.labels" -}}
{{ include "proxy-injector.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "proxy-injector.serviceName" -}}
{{- include "proxy-injector.fullname" . }}
{{- end }}

{{- define "proxy-injector.tlsSecretName" -}}
{{- if eq .Values.certificates.mode "existingSecret" }}
{{- required "certificates.existingSecret.name is required when certificates.mode is existingSecret" .Values.certificates.existingSecret.name }}
{{- else }}
{{- printf "%s-tls" (include "proxy-injector.fullname" .) }}
{{- end }}
{{- end }}

{{/* The DNS names kube-apiserver may use for the Service. */}}
{{- define "proxy-injector.dnsNames" -}}
{{- $svc := include "proxy-injector.serviceName" . }}
{{- $ns := .Release.Namespace }}
{{- list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) | toJson }}
{{- end }}

{{/* Where the injector reads Linkerd's configuration: "inline" (this chart's ConfigMap), "mounted" or "api". */}}
{{- define "proxy-injector.configSource" -}}
{{- if or .Values.linkerd.values .Values.linkerd.trustAnchorsPEM }}inline
{{- else if eq .Release.Namespace .Values.linkerd.namespace }}mounted
{{- else }}api
{{- end }}
{{- end }}

{{- define "proxy-injector.image" -}}
{{- if not .Values.image.repository }}
{{- fail "image.repository is not set: no image of proxy-injector is published. Build one from the project's Dockerfile and push it where your cluster pulls from (docker build -t REGISTRY/proxy-injector:0.1.0 . && docker push REGISTRY/proxy-injector:0.1.0), then install with --set image.repository=REGISTRY/proxy-injector --set image.tag=0.1.0" }}
{{- end }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
The webhook's serving certificate when the chart generates it, as JSON: {caCrt, caKey, tlsCrt, tlsKey, notAfter, sans}
(PEM text; notAfter in Unix seconds). Worked out once per render and remembered in .Values, because the Secrets, the
webhook configuration and the Deployment's checksum must all see the same certificate. Against a cluster, the CA and
the serving certificate already stored are reused, so that `helm upgrade` never leaves a stale caBundle behind: the
CA until it is deleted, the serving certificate until it is within renewBeforeDays of expiry or its names change, at
which point a new one is signed by the same CA (the caBundle stays valid throughout). `helm template` has no cluster
to look in and generates new ones each time.
*/}}
{{- define "proxy-injector.generatedCertificates" -}}
{{- if not (hasKey .Values "_generatedCertificates") }}
{{- $fullname := include "proxy-injector.fullname" . }}
{{- $g := .Values.certificates.generate }}
{{- $dns := include "proxy-injector.dnsNames" . | fromJsonArray }}
{{- $ips := list }}
{{- with .Values.webhook.url }}
{{- $host := (urlParse .).hostname }}
{{- if regexMatch "^[0-9.]+$|:" $host }}
{{- $ips = append $ips (trimAll "[]" $host) }}
{{- else }}
{{- $dns = append $dns $host }}
{{- end }}
{{- end }}
{{- $sans := concat $dns $ips | toJson }}
{{- $ca := dict }}
{{- $stored := lookup "v1" "Secret" .Release.Namespace (printf "%s-ca" $fullname) }}
{{- if and $stored (index ($stored.data | default dict) "tls.crt") (index ($stored.data | default dict) "tls.key") }}
{{- $ca = buildCustomCert (index $stored.data "tls.crt") (index $stored.data "tls.key") }}
{{- else }}
{{- $ca = genCA (printf "%s webhook CA" $fullname) (int $g.caValidityDays) }}
{{- end }}
{{- $out := dict "caCrt" $ca.Cert "caKey" $ca.Key "sans" $sans }}
{{- $now := now | unixEpoch | int64 }}
{{- $current := lookup "v1" "Secret" .Release.Namespace (printf "%s-tls" $fullname) }}
{{- $currentData := dict }}
{{- $currentAnnotations := dict }}
{{- if $current }}
{{- $currentData = $current.data | default dict }}
{{- $currentAnnotations = $current.metadata.annotations | default dict }}
{{- end }}
{{- $notAfter := index $currentAnnotations "proxy-injector.io/not-after" | default "0" | int64 }}
{{- $reuse := and (index $currentData "tls.crt") (index $currentData "tls.key")
      (eq (index $currentData "ca.crt" | default "") (b64enc $ca.Cert))
      (eq (index $currentAnnotations "proxy-injector.io/sans" | default "") $sans)
      (gt (sub $notAfter $now) (mul (int64 $g.renewBeforeDays) 86400)) }}
{{- if $reuse }}
{{- $_ := set $out "tlsCrt" (index $currentData "tls.crt" | b64dec) }}
{{- $_ := set $out "tlsKey" (index $currentData "tls.key" | b64dec) }}
{{- $_ := set $out "notAfter" $notAfter }}
{{- else }}
{{- $cert := genSignedCert (first $dns) $ips $dns (int $g.validityDays) $ca }}
{{- $_ := set $out "tlsCrt" $cert.Cert }}
{{- $_ := set $out "tlsKey" $cert.Key }}
{{- $_ := set $out "notAfter" (add $now (mul (int64 $g.validityDays) 86400)) }}
{{- end }}
{{- $_ := set .Values "_generatedCertificates" $out }}
{{- end }}
{{- toJson .Values._generatedCertificates }}
{{- end }}

{{/* The PEM bundle kube-apiserver uses to verify the injector, or nothing when cert-manager injects it. */}}
{{- define "proxy-injector.caBundle" -}}
{{- if eq .Values.certificates.mode "generate" }}
{{- (include "proxy-injector.generatedCertificates" . | fromJson).caCrt }}
{{- else if eq .Values.certificates.mode "existingSecret" }}
{{- required "certificates.existingSecret.caBundle is required when certificates.mode is existingSecret" .Values.certificates.existingSecret.caBundle }}
{{- end }}
{{- end }}
