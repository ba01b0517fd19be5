# SPDX-License-Identifier: MIT
# Doxygen's INPUT_FILTER for include/oxr/*.h (docs/Doxyfile): the headers
# keep the project's plain C comments, and this turns them into doxygen's
# on the way in, so that no header carries doxygen syntax.  Every line
# stays on its line, so doxygen's warnings name the header's own lines.
#   the comment before the include guard    the file's description (@file)
#   a comment that starts a line            the next declaration's
#   a comment after code on its line        that member's (/**<)
#   /* ---- section ---- */, the SPDX line  left as they are
/^\/\* SPDX-License-Identifier/ { print; next }
/^#ifndef OXR_/ { guarded = 1 }
/^[ \t]*\/\* ----/ { print; next }
!guarded && /^\/\*([^*]|$)/ && !seen_file {
	seen_file = 1
	if ($0 ~ /\*\/[ \t]*$/)
		sub(/\*\/[ \t]*$/, " @file */")
	else
		$0 = $0 " @file"
	sub(/^\/\*/, "/**")
	print
	next
}
/^[ \t]*\/\*([^*]|$)/ { sub(/\/\*/, "/**"); print; next }
/[^ \t].*\/\*([^*]|$)/ && !/^#[ \t]*(endif|include)/ { sub(/\/\*/, "/**<"); print; next }
{ print }
