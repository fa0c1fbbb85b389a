#!/usr/bin/env bash
# Static checks of docker/Dockerfile.* (no Docker engine, no linter on Debian 12):
#  - every COPY source (other than --from=STAGE) exists in the repository;
#  - every RUN in a stage that builds tern (a stage another stage copies from) uses
#    scripts/setup.sh or the project's build command (cmake --preset / cmake --build / make);
#  - the final stage runs as a non-root USER and has a HEALTHCHECK on /health;
#  - the k8s ConfigMaps' tern configs pass `tern serve --check`, and the manifests hold what the
#    deployment relies on (probes, preStop, grace period, GPU requests).
# Usage: dockerfile_check_test.sh SOURCE_DIR [TERN_BINARY]
set -uo pipefail
source_dir=$1 tern=${2:-}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# Joins continuation lines and drops comments: one instruction per line.
instructions() { sed -e '/^[[:space:]]*#/d' "$1" | sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' | sed -e '/^[[:space:]]*$/d'; }

check_dockerfile() {
  local file=$1 name
  name=$(basename "$file")
  [ -f "$file" ] || { fail "$name is missing"; return; }
  local stage="" stage_index=0 last_user="" healthcheck="" from_stages=""
  declare -A run_lines=()
  while IFS= read -r line; do
    read -r keyword rest <<<"$line"
    keyword=${keyword^^}
    case $keyword in
      FROM)
        stage_index=$((stage_index + 1))
        stage=$(sed -nE 's/.*[[:space:]][Aa][Ss][[:space:]]+([A-Za-z0-9_.-]+).*/\1/p' <<<"$rest")
        [ -n "$stage" ] || stage="#$stage_index"
        last_user="" healthcheck=""
        ;;
      COPY|ADD)
        local args=($rest) sources=() from=""
        for arg in "${args[@]}"; do
          case $arg in
            --from=*) from=${arg#--from=} ;;
            --*) ;;
            *) sources+=("$arg") ;;
          esac
        done
        unset 'sources[${#sources[@]}-1]'  # the last one is the destination
        if [ -n "$from" ]; then
          from_stages+=" $from"
        else
          for source in "${sources[@]}"; do
            [ -e "$source_dir/$source" ] || fail "$name: $keyword source '$source' does not exist"
          done
        fi
        ;;
      RUN) run_lines[$stage]+="$rest"$'\n' ;;
      USER) last_user=$rest ;;
      HEALTHCHECK) healthcheck=$rest ;;
    esac
  done < <(instructions "$file")

  [ "$stage_index" -ge 2 ] || fail "$name: not a multi-stage build"
  for built in $from_stages; do
    while IFS= read -r run; do
      [ -z "$run" ] && continue
      if ! grep -qE 'scripts/setup\.sh|cmake --preset|cmake --build|(^|[;&|[:space:]])make( |$)' <<<"$run"; then
        fail "$name: RUN in build stage '$built' uses neither scripts/setup.sh nor the project build: $run"
      fi
    done <<<"${run_lines[$built]:-}"
    grep -q 'scripts/setup\.sh' <<<"${run_lines[$built]:-}" || fail "$name: stage '$built' does not run scripts/setup.sh"
    grep -qE 'cmake --build|make ' <<<"${run_lines[$built]:-}" || fail "$name: stage '$built' does not build tern"
  done
  [ -n "$from_stages" ] || fail "$name: the runtime stage copies nothing from a build stage"
  case ${last_user%%:*} in
    "") fail "$name: the runtime stage sets no USER (it would run as root)" ;;
    root|0) fail "$name: the runtime stage runs as root" ;;
  esac
  grep -q '/health' <<<"$healthcheck" || fail "$name: the runtime stage has no HEALTHCHECK on /health"
  grep -q '/etc/tern/config.yaml' "$file" || fail "$name: does not serve /etc/tern/config.yaml"
  grep -q '/models' "$file" || fail "$name: has no /models mount point"
}

check_dockerfile "$source_dir/docker/Dockerfile.cpu"
check_dockerfile "$source_dir/docker/Dockerfile.cuda"
grep -q 'TERN_CUDA=ON' "$source_dir/docker/Dockerfile.cuda" || fail "Dockerfile.cuda: not built with TERN_CUDA=ON"
grep -qE '^FROM nvidia/cuda:.*runtime' "$source_dir/docker/Dockerfile.cuda" || fail "Dockerfile.cuda: runtime stage is not an NVIDIA CUDA runtime image"

# Files that compose.yaml mounts exist.
for mounted in nginx/nginx.conf prometheus/prometheus.yml grafana/tern-dashboard.json \
               grafana/provisioning-datasources.yaml grafana/provisioning-dashboards.yaml; do
  grep -q "./$mounted" "$source_dir/docker/compose.yaml" || fail "compose.yaml does not mount $mounted"
  [ -f "$source_dir/docker/$mounted" ] || fail "docker/$mounted is missing"
done
grep -q 'tern-a:8000' "$source_dir/docker/prometheus/prometheus.yml" && grep -q 'tern-b:8000' "$source_dir/docker/prometheus/prometheus.yml" \
  || fail "prometheus.yml does not scrape both replicas"
# Every metric the dashboard queries is one tern exports (service/service_metrics.cpp).
for metric in $(grep -oE 'tern_[a-z_]+' "$source_dir/docker/grafana/tern-dashboard.json" | sed -E 's/_(bucket|sum|count)$//' | sort -u); do
  grep -q "\"$metric\"" "$source_dir/service/service_metrics.cpp" || fail "dashboard uses unknown metric $metric"
done

# Kubernetes: probes, drain and GPU requests.
for dir in k8s k8s/cuda; do
  deployment="$source_dir/docker/$dir/deployment.yaml"
  for needle in 'path: /health' 'path: /ready' 'preStop:' 'terminationGracePeriodSeconds:' 'runAsNonRoot: true'; do
    grep -q "$needle" "$deployment" || fail "$dir/deployment.yaml lacks $needle"
  done
  for kind in Service PodDisruptionBudget ConfigMap; do
    grep -q "^kind: $kind" "$source_dir/docker/$dir/"*.yaml || fail "$dir has no $kind"
  done
  # The grace period covers the preStop sleep, tern's drain_s, and the 2 s in which the streams
  # the drain timeout cut get their error event.
  grace=$(sed -nE 's/.*terminationGracePeriodSeconds: *([0-9]+).*/\1/p' "$deployment")
  sleep_s=$(grep -A3 'preStop:' "$deployment" | sed -nE 's/.*"sleep", *"([0-9]+)".*/\1/p')
  drain=$(sed -nE 's/.*drain_s: *([0-9]+).*/\1/p' "$source_dir/docker/$dir/configmap.yaml")
  if [ -z "$grace" ] || [ -z "$sleep_s" ] || [ -z "$drain" ] || [ "$grace" -le $((sleep_s + drain + 2)) ]; then
    fail "$dir: terminationGracePeriodSeconds ($grace) must exceed preStop sleep ($sleep_s) + drain_s ($drain) + 2"
  fi
  if [ -n "$tern" ]; then
    config=$(mktemp)
    awk '/config.yaml: \|/ { on = 1; next } on && /^    / { print substr($0, 5); next } on { exit }' \
      "$source_dir/docker/$dir/configmap.yaml" > "$config"
    TERN_API_KEY=check "$tern" serve --config "$config" --check > /dev/null \
      || fail "$dir/configmap.yaml: tern serve --check rejects its config"
    rm -f "$config"
  fi
done
grep -q 'nvidia.com/gpu: 2' "$source_dir/docker/k8s/cuda/deployment.yaml" || fail "k8s/cuda requests no GPUs"

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "Dockerfiles, compose and manifests OK"
