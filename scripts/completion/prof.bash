# bash completion for prof (libprof): commands, each command's options as its --help
# lists them (so they never drift from prof itself), captures (*.prof) and files.
_prof()
{
	local cur prev cmd
	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "$(prof --help 2>/dev/null |
			sed -n 's/^  \([a-z][a-z]*\) .*/\1/p')" -- "$cur"))
		return
	fi
	cmd=${COMP_WORDS[1]}
	# prof record: after the command to run, that command's own completion is not ours
	if [ "$cmd" = record ]; then
		local i
		for ((i = 2; i < COMP_CWORD; i++)); do
			case ${COMP_WORDS[i]} in
			--) COMPREPLY=($(compgen -f -- "$cur")); return ;;
			-*) ;;
			*) case ${COMP_WORDS[i-1]} in -o|--output|--*=*) ;; *) COMPREPLY=($(compgen -f -- "$cur")); return ;; esac ;;
			esac
		done
	fi
	case $prev in
	-o|--output)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--*)
		# an option with a few values names them when given a wrong one: "--format
		# needs text, csv or json (got ...)"; asked only of the commands that just read
		# (prof record would run the value as the command)
		local words=
		case $cmd in report|export|tree|html|summary|diff)
			words=$(prof "$cmd" "$prev" '?' 2>&1 </dev/null |
				sed -n 's/.* needs \([a-z_]*\(, [a-z_]*\)* or [a-z_]*\) (got .*/\1/p' |
				sed 's/,/ /g; s/ or / /') ;;
		esac
		if [ -n "$words" ]; then
			COMPREPLY=($(compgen -W "$words" -- "$cur"))
			return
		fi ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(prof "$cmd" --help 2>/dev/null |
			grep -o -- '--[a-z][a-z-]*' | sort -u)" -- "$cur"))
		return
	fi
	case $cmd in
	report|export|tree|html|summary|diff)
		COMPREPLY=($(compgen -f -X '!*.prof' -- "$cur") $(compgen -d -- "$cur")) ;;
	*)
		COMPREPLY=($(compgen -f -- "$cur")) ;;
	esac
}
complete -o filenames -F _prof prof
