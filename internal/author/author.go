// Package author reads and writes the author of an At: the user who last
// set its spec, in the annotation cnatv1beta1.AnnotationAuthor.
package author

import (
	"encoding/json"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// Annotation is the value of the author annotation for user: the JSON of
// its name, UID, groups and extra attributes, all the authorizers read.
func Annotation(user authenticationv1.UserInfo) string {
	b, err := json.Marshal(authenticationv1.UserInfo{Username: user.Username, UID: user.UID, Groups: user.Groups, Extra: user.Extra})
	if err != nil {
		// A struct of strings always marshals.
		panic(fmt.Sprintf("marshalling a UserInfo: %v", err))
	}
	return string(b)
}

// Of is the author of at, and whether it has one: an At stored before
// authors were recorded, or while the webhooks were off, has none.
func Of(at *cnatv1beta1.At) (authenticationv1.UserInfo, bool, error) {
	value, ok := at.Annotations[cnatv1beta1.AnnotationAuthor]
	if !ok {
		return authenticationv1.UserInfo{}, false, nil
	}
	var user authenticationv1.UserInfo
	if err := json.Unmarshal([]byte(value), &user); err != nil {
		return user, true, fmt.Errorf("metadata.annotations[%s] is not the JSON of a user (username, uid, groups, extra): %w", cnatv1beta1.AnnotationAuthor, err)
	}
	if user.Username == "" {
		return user, true, fmt.Errorf("metadata.annotations[%s] names no user: it must be the JSON of a user with a username", cnatv1beta1.AnnotationAuthor)
	}
	return user, true, nil
}
