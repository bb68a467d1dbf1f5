// Package docs holds Switchyard's user documentation, one Markdown page per
// concern; it has no code. Its test checks that every relative link and
// #anchor in README.md, docs/*.md and bench/*.md resolves as GitHub renders it,
// and that the pages code comments cite exist.
package docs
