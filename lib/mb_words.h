/*
 * mb_words: an enum, its names and its words from one list, so that what
 * parses a setting's value also prints it. A list is a macro LIST(X, SEP) of
 * rows X(ENUM, "name", ...) with SEP between them (mb_plan.h's settings,
 * mb_ns.h's methods, mb_variant.h's variants). MB_WORDS(LIST) is its names
 * as one string, "shape|model", in the enum's order: the values an option
 * takes and its help shows (the value's index is the enum), and the words a
 * results column holds. MB_NAME_ makes its names array: { LIST(MB_NAME_, ) }.
 */
#ifndef MB_WORDS_H
#define MB_WORDS_H

#define MB_WORD_(e, name, ...) name
#define MB_NAME_(e, name, ...) name,
#define MB_WORDS(LIST)	       LIST(MB_WORD_, "|")

#endif
