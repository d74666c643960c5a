# Sourced by the TLC test scripts: run_tlc SPEC_DIR CONFIG WORK_DIR runs TLC
# (2 workers) on one config and sets:
#   module        the module checked: MCx.cfg checks MCx.tla by convention; a
#                 bug config names its module on its first line (`\* module: MCx`)
#   tlc_log       TLC's output, under WORK_DIR
#   tlc_status    TLC's exit status
#   tlc_seconds   wall time
#   tlc_distinct, tlc_generated, tlc_depth   TLC's figures (empty if it printed none)
# TLC reads the spec from SPEC_DIR and writes its state files under WORK_DIR.
run_tlc() {
  local spec_dir=$1 config=$2 work_dir=$3 first_line started
  module=${config%.cfg}
  first_line=$(head -n 1 "$spec_dir/$config")
  case $first_line in
    '\* module: '*) module=${first_line#'\* module: '} ;;
  esac
  mkdir -p "$work_dir"
  tlc_log="$work_dir/${config%.cfg}.tlc.log"
  started=$(date +%s.%N)
  (cd "$spec_dir" && java -XX:+UseParallelGC -cp "$TLA2TOOLS_JAR" tlc2.TLC -workers 2 \
     -metadir "$work_dir/states-${config%.cfg}" -cleanup -config "$config" "$module.tla") >"$tlc_log" 2>&1
  tlc_status=$?
  tlc_seconds=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  tlc_distinct=$(sed -n 's/.* \([0-9]*\) distinct states found.*/\1/p' "$tlc_log" | tail -n 1)
  tlc_generated=$(sed -n 's/^\([0-9]*\) states generated.*/\1/p' "$tlc_log" | tail -n 1)
  tlc_depth=$(sed -n 's/.*depth of the complete state graph search is \([0-9]*\).*/\1/p' "$tlc_log")
}
