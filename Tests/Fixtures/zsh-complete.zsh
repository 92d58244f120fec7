#!/usr/bin/env zsh
# zsh-complete.zsh DIR LINE: prints, one a line, what zsh's real completion system offers when Tab
# is pressed after LINE, with DIR's completion functions first in fpath. Run with `zsh -f`.
# It drives an interactive zsh on a pseudo-terminal (zpty) and records every match that reaches
# compadd, the way zsh-capture-completion does; TMPDIR holds compinit's dump file.
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PS1=''; PS2=''; unsetopt zle_bracketed_paste 2>/dev/null; fpath=($1 \$fpath); autoload -U compinit; compinit -u -d $TMPDIR/zcompdump-$$"
zpty -w z 'compadd () { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi; typeset -a hits; builtin compadd -A hits "$@"; (( $#hits == 0 )) && return; print -r -l -- "<hit>"${^hits}; builtin compadd "$@"; }'
zpty -w z 'print "<ready>"'
zpty -r -m z out '*<ready>*'
zpty -w -n z "$2"$'\t'
zpty -w z $'\C-u''print "<end>"'
zpty -r -m z out '*<end>*<end>*' 
print -r -- "$out" | tr -d '\r' | sed -n 's/^.*<hit>//p' | sort -u
zpty -d z
