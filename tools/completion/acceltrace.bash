# bash completion for acceltrace. Commands and options come from the
# command itself ('acceltrace help --commands', 'help --options CMD'), the
# same tables as its --help, so this script never lists a stale option.
_acceltrace()
{
    local cur prev cmd i
    COMPREPLY=()
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    cmd=
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        -*) ;;
        *) cmd=${COMP_WORDS[i]}; break ;;
        esac
    done
    if [[ -z $cmd ]]; then
        COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" help --commands 2>/dev/null)" -- "$cur"))
        return 0
    fi
    case $cmd in
    help)
        COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" help --commands 2>/dev/null)" -- "$cur"))
        return 0 ;;
    run)
        # after the program, complete its own arguments as files and commands
        for ((i = i + 1; i < COMP_CWORD; i++)); do
            case ${COMP_WORDS[i]} in
            --) _command_offset $((i + 1)) 2>/dev/null; return 0 ;;
            -o|--output) ((i++)) ;;
            -*) ;;
            *) _command_offset "$i" 2>/dev/null; return 0 ;;
            esac
        done ;;
    esac
    case $cur in
    --format=*) COMPREPLY=($(compgen -W "table csv json" -- "${cur#*=}")); return 0 ;;
    --names=*) COMPREPLY=($(compgen -W "base full mangled" -- "${cur#*=}")); return 0 ;;
    --timeunit=*) COMPREPLY=($(compgen -W "ns us ms s" -- "${cur#*=}")); return 0 ;;
    --log=*) COMPREPLY=($(compgen -W "quiet error info debug" -- "${cur#*=}")); return 0 ;;
    --capture-range=*) COMPREPLY=($(compgen -W "none api nvtx:" -- "${cur#*=}")); return 0 ;;
    -*)
        COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" help --options "$cmd" 2>/dev/null)" -- "$cur"))
        [[ ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
        return 0 ;;
    esac
    if [[ $prev == -o || $prev == --output ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
        return 0
    fi
    case $cmd in
    summary) COMPREPLY=($(compgen -f -X '!*.@(json|json.gz)' -- "$cur") $(compgen -d -- "$cur")) ;;
    run) COMPREPLY=($(compgen -c -- "$cur")) ;;
    esac
    return 0
}
complete -F _acceltrace acceltrace
